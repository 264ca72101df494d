"""Native core of brokerscope's GC log parser (see collectors/gc/native.py)."""
from ._native import SOURCE_HASH, NativeParser

__all__ = ["NativeParser", "SOURCE_HASH"]
