"""The simulated cluster's controllers (TauGrid, Kueue, workloads, nodes, garbage collection); see world.py."""
