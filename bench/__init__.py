"""Benchmarks, run by hand; see RESULTS.md."""
