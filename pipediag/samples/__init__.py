"""Background sampling of CPU (psutil) and GPU (NVML) activity while the modes run."""
