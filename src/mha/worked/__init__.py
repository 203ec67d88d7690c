"""Worked examples: small inputs whose every number the pages print."""
