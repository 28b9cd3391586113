"""`make bench`: latency, throughput, contention and exactness figures over real HTTP.

`python -m bench.run` starts the service itself (once per /mcp dispatch mode), measures,
prints one report and exits non-zero on any correctness failure. See bench/run.py.
"""
