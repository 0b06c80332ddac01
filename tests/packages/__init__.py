"""Tests of running registry packages: the resolver over the real dump, runners, cache, failures."""
