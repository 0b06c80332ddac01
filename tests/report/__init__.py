"""Tests of the published report site, the score and its browser check."""
