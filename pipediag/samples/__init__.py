"""Reading the machine while the modes run: CPU (psutil), GPU (NVML, GPM on Hopper and newer), container limits, and
the environment a run saw.
"""
