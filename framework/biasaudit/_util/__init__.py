"""Helpers every stage may use: bounded file access, shipped paths, secrets scrubbing, progress lines."""
