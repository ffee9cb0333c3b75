"""Test tools shared by the reliability tests and the load harness (not collected as tests)."""
