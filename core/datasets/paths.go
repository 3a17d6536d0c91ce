package datasets

// Path names sample index's file (pipeline.Pather), for error messages:
// printable (see Printable), so a name that is not UTF-8 survives the trip
// to Python as the same escapes the step's own message shows.
func (s *imageSource) Path(index int64) string { return filePath(s.files, index) }

// Path names sample index's file (pipeline.Pather), for error messages.
func (s *audioSource) Path(index int64) string { return filePath(s.files, index) }

// Path names sample index's image and label files (pipeline.Pather).
func (s *volumeSource) Path(index int64) string {
	if index < 0 || index >= int64(len(s.pairs)) {
		return ""
	}
	return Printable(s.pairs[index][0]) + ", " + Printable(s.pairs[index][1])
}

func filePath(files []File, index int64) string {
	if index < 0 || index >= int64(len(files)) {
		return ""
	}
	return Printable(files[index].Path)
}
