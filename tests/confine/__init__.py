"""Tests of the child's confinement (scanner/confine/): the namespace launcher, devices, IPC, network, limits."""
