"""Background sampling of CPU (psutil) and GPU (NVML, and GPM on Hopper and newer) activity while
the modes run."""
