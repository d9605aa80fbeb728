"""Projects: the workspace saved as one .trtlab file and opened back, autosave and recovery."""
