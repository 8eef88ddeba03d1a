"""On the device: unpack what benchmarks/tf_gpu/pack.sh carried and give TensorFlow's GPU build the
CUDA libraries it asks for at start-up.

    python3 /tmp/parts/setup.py      # after the parts are copied to /tmp/parts

Joins /tmp/parts/part.* into the tar of wheels, extracts every wheel into /tmp/site (the device
image has no registry and no zstd: wheels are zip files, Python's zipfile reads them), then makes
/tmp/cuda12: one symbolic link per CUDA 12 soname that TensorFlow 2.21 dlopens, pointing at the
device's own library of the same family (CUDA 13 toolkit in /usr/local/cuda, cuDNN 9 and NCCL 2
from PyTorch's venv), except libcudart.so.12, which is carried (nvidia-cuda-runtime-cu12). Prints
each link with its target, and every soname it could not find. Export
LD_LIBRARY_PATH=/tmp/cuda12:<the cuDNN folder> (printed last) before importing TensorFlow.
"""

from __future__ import annotations

import glob
import io
import os
import sys
import tarfile
import zipfile

PARTS = "/tmp/parts"
SITE = "/tmp/site"
LINKS = "/tmp/cuda12"
SEARCH = ["/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib",
          *glob.glob("/opt/torch/.venv/lib/python3*/site-packages/nvidia/*/lib"),
          *glob.glob("/usr/local/lib/python3*/dist-packages/nvidia/*/lib")]
# TensorFlow's soname → the device's library names to try, in order.
WANTED = {
    "libcublas.so.12": ["libcublas.so.13", "libcublas.so.12"],
    "libcublasLt.so.12": ["libcublasLt.so.13", "libcublasLt.so.12"],
    "libcufft.so.11": ["libcufft.so.12", "libcufft.so.11"],
    "libcusolver.so.11": ["libcusolver.so.12", "libcusolver.so.11"],
    "libcusparse.so.12": ["libcusparse.so.12"],
    "libcurand.so.10": ["libcurand.so.10"],
    "libnvJitLink.so.12": ["libnvJitLink.so.13", "libnvJitLink.so.12"],
    "libcudnn.so.9": ["libcudnn.so.9"],
    "libnccl.so.2": ["libnccl.so.2"],
}


def unpack() -> None:
    parts = sorted(glob.glob(os.path.join(PARTS, "part.*")))
    raw = b"".join(open(p, "rb").read() for p in parts)
    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
        names = [m for m in tar.getmembers() if m.name.endswith(".whl")]
        for member in names:
            with zipfile.ZipFile(io.BytesIO(tar.extractfile(member).read())) as whl:
                whl.extractall(SITE)
    print(f"unpacked {len(parts)} parts, {len(names)} wheels into {SITE}")


def find(name: str) -> str | None:
    for folder in SEARCH:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    return None


def link() -> list[str]:
    os.makedirs(LINKS, exist_ok=True)
    folders = []
    for soname, candidates in WANTED.items():
        target = next((p for p in map(find, candidates) if p), None)
        if target is None:
            print(f"MISSING {soname}: none of {candidates} in {SEARCH}")
            continue
        dst = os.path.join(LINKS, soname)
        if os.path.lexists(dst):
            os.unlink(dst)
        os.symlink(target, dst)
        folders.append(os.path.dirname(target))
        print(f"{soname} -> {target}")
    cudart = glob.glob(os.path.join(SITE, "nvidia/cuda_runtime/lib/libcudart.so.12"))
    print(f"libcudart.so.12 carried: {cudart}")
    return [LINKS, *(os.path.dirname(p) for p in cudart), *dict.fromkeys(folders)]


if __name__ == "__main__":
    if "--link-only" not in sys.argv:
        unpack()
    print("LD_LIBRARY_PATH=" + ":".join(link()))
