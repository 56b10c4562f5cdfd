#!/usr/bin/env python3
"""Public names of offload-format from rustdoc JSON.

    cargo +nightly rustdoc -p offload-format --lib -- -Z unstable-options --output-format json
    python3 xtask/scripts/public_names.py target/doc/offload_format.json . [list]

Counts the distinct names of the items rustdoc documents as the crate's public
API: items of the crate with `public` visibility (modules, types, functions,
constants, statics, traits, macros, inherent methods and associated items,
struct fields) and the variants of public enums. Then the names that appear
(as a whole word) nowhere in the workspace outside crates/offload-format/src
(with `list`, those names one a line).
"""
import json, os, re, sys

doc = json.load(open(sys.argv[1]))
root = sys.argv[2]
index = doc["index"]
names = set()
top = set()
kinds = {}
for id_, it in index.items():
    if it.get("crate_id") != 0 or not it.get("name"):
        continue
    inner = it.get("inner", {})
    kind = next(iter(inner)) if isinstance(inner, dict) and inner else "?"
    if kind in ("impl", "use"):
        continue
    if it.get("visibility") == "public" or kind == "variant":
        if id_ == str(doc["root"]) or it["name"] == doc["index"][str(doc["root"])]["name"]:
            continue
        names.add(it["name"])
        if kind not in ("variant", "struct_field"):
            top.add(it["name"])
        kinds[kind] = kinds.get(kind, 0) + 1

outside = []
for d, _, files in os.walk(root):
    if "/target" in d or "/.git" in d or d.startswith(os.path.join(root, "crates/offload-format/src")):
        continue
    for f in files:
        if f.endswith(".rs"):
            outside.append(open(os.path.join(d, f), errors="replace").read())
text = "\n".join(outside)
words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
unused = sorted(n for n in names if n not in words)
print(f"public items by kind: {dict(sorted(kinds.items()))}")
print(f"distinct public names (fields and variants included): {len(names)}, "
      f"not used outside crates/offload-format/src: {len(unused)}")
unused_top = [n for n in unused if n in top]
print(f"distinct public names of items (modules, types, functions, constants, methods): "
      f"{len(top)}, not used outside: {len(unused_top)}")
if len(sys.argv) > 3:
    print("\n".join(unused))
