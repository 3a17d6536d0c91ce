module github.com/minatoloader/minatoloader

go 1.26
