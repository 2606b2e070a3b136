"""Run a repository's own commands on a private copy of its tree, with no secret in reach."""
