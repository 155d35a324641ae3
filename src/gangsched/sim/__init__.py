"""The simulator: replay a workload trace on a cluster over simulated time, under several
scheduling policies, and report how they compare (``gangsched simulate``)."""
