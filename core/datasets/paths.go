package datasets

// Path names sample index's file (pipeline.Pather), for error messages.
func (s *imageSource) Path(index int64) string { return filePath(s.files, index) }

// Path names sample index's file (pipeline.Pather), for error messages.
func (s *audioSource) Path(index int64) string { return filePath(s.files, index) }

// Path names sample index's image and label files (pipeline.Pather).
func (s *volumeSource) Path(index int64) string {
	if index < 0 || index >= int64(len(s.pairs)) {
		return ""
	}
	return s.pairs[index][0] + ", " + s.pairs[index][1]
}

func filePath(files []File, index int64) string {
	if index < 0 || index >= int64(len(files)) {
		return ""
	}
	return files[index].Path
}
