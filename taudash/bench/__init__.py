"""Headless parts of `taudash bench`: a synthetic fleet-scale cluster and the measurements on it."""
