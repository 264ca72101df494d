"""Print the hash build.rs stamps into the module (FNV-1a over the crate's sources), so that
infra/setup.sh can skip rebuilding when the installed module matches this source.

    python native/gcparse/tools/source_hash.py
"""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
files = ["Cargo.toml", "Cargo.lock", "pyproject.toml", "build.rs"]
for d in ("src", "python/brokerscope_gcparse"):
    files += [f"{d}/{n}" for n in os.listdir(os.path.join(ROOT, d)) if n.endswith((".rs", ".py"))]
h = 0xCBF29CE484222325
for f in sorted(files):
    try:
        with open(os.path.join(ROOT, f), "rb") as fh:
            data = fh.read()
    except OSError:
        data = b""
    for b in f.encode() + b"\0" + data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
print(f"{h:016x}")
