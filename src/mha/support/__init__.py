"""Plumbing that no page explains: the build-time result cache, input validation,
how numbers are written in prose, and the results ``make bench`` committed."""
