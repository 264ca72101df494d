"""JMX ObjectName parsing — never string-match MBean names.

Jolokia ≤2.4 returns wildcard-read keys in canonical form (properties sorted), ≥2.5 as registered;
Artemis quotes values (`broker="b1"`, with backslash escapes), ActiveMQ Classic encodes them
(`: , ' "` → `_`, `?` → `&qe;`, `=` → `&amp;`, `*` → `&ast;`). Parse to (domain, properties) and
compare those.
"""

from __future__ import annotations

from dataclasses import dataclass

_QUOTE_ESCAPES = {'"': '"', "\\": "\\", "*": "*", "?": "?", "n": "\n"}


class ObjectNameError(ValueError):
    pass


@dataclass(frozen=True)
class ObjectName:
    domain: str
    props: tuple[tuple[str, str], ...]  # in the order written; values unquoted
    pattern: bool = False
    list_pattern: bool = False  # ends in ",*": more properties may follow

    def get(self, key: str, default: str | None = None) -> str | None:
        for k, v in self.props:
            if k == key:
                return v
        return default

    def __getitem__(self, key: str) -> str:
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def as_dict(self) -> dict[str, str]:
        return dict(self.props)

    @property
    def canonical(self) -> str:
        """Canonical form (properties sorted by key), values re-quoted where needed."""
        parts = [f"{k}={quote_if_needed(v, wildcards=self.pattern)}" for k, v in sorted(self.props)]
        if self.list_pattern:
            parts.append("*")
        return f"{self.domain}:{','.join(parts)}"

    def matches(self, domain: str | None = None, **props: str) -> bool:
        """True when the domain and every given property equal (None/'*' = any value)."""
        if domain is not None and domain != self.domain:
            return False
        mine = self.as_dict()
        for k, v in props.items():
            if v in (None, "*"):
                if k not in mine:
                    return False
            elif mine.get(k) != v:
                return False
        return True


def quote_if_needed(value: str, wildcards: bool = False) -> str:
    """Quote a value when JMX requires it; with `wildcards`, * and ? stay pattern characters."""
    special = ',=:"\n' if wildcards else ',=:"*?\n'
    if any(c in value for c in special):
        esc = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        if not wildcards:
            esc = esc.replace("*", "\\*").replace("?", "\\?")
        return f'"{esc}"'
    return value


def parse_object_name(name: str) -> ObjectName:
    """Parse `domain:k=v,k2="quoted, value"[,*]`. Raises ObjectNameError naming the problem."""
    if not isinstance(name, str) or ":" not in name:
        raise ObjectNameError(f"not an ObjectName (no ':'): {name!r}")
    domain, rest = name.split(":", 1)
    props: list[tuple[str, str]] = []
    pattern = "*" in domain or "?" in domain
    list_pattern = False
    i, n = 0, len(rest)
    while i < n:
        if rest[i] == "*" and (i + 1 == n or rest[i + 1] == ","):
            pattern = list_pattern = True
            i += 2
            continue
        eq = rest.find("=", i)
        if eq < 0:
            raise ObjectNameError(f"property without '=' at offset {i} in {name!r}")
        key = rest[i:eq]
        i = eq + 1
        if i < n and rest[i] == '"':
            i += 1
            buf = []
            while True:
                if i >= n:
                    raise ObjectNameError(f"unterminated quoted value for {key!r} in {name!r}")
                c = rest[i]
                if c == "\\" and i + 1 < n:
                    buf.append(_QUOTE_ESCAPES.get(rest[i + 1], rest[i + 1]))
                    i += 2
                    continue
                if c == '"':
                    i += 1
                    break
                buf.append(c)
                i += 1
            value = "".join(buf)
            if i < n and rest[i] != ",":
                raise ObjectNameError(f"garbage after quoted value of {key!r} in {name!r}")
        else:
            comma = rest.find(",", i)
            end = n if comma < 0 else comma
            value = rest[i:end]
            if "*" in value or "?" in value:
                pattern = True
            i = end
        props.append((key, value))
        i += 1  # skip the comma
    if not props and not pattern:
        raise ObjectNameError(f"ObjectName has no properties: {name!r}")
    return ObjectName(domain, tuple(props), pattern, list_pattern)


_ACTIVEMQ_DECODE = (("&qe;", "?"), ("&ast;", "*"), ("&amp;", "="))


def decode_activemq(value: str) -> str:
    """Undo ActiveMQ Classic's JMXSupport.encodeObjectNamePart where it is reversible.

    `: , ' "` were all mapped to `_` and cannot be recovered; the rest can.
    """
    for enc, dec in _ACTIVEMQ_DECODE:
        value = value.replace(enc, dec)
    return value
