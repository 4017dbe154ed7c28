"""Thresholds judged against estimates, and the exit codes a CI job gates on."""
