"""Session 32: the check of test_codegen's ptx_s16 on the PTX in a kernel
cache (NVIDIA's OpenCL binaries are PTX text): does any function read the
result of a neg.s16 or abs.s16, directly or through mov/selp, in a signed
16-bit instruction other than add, sub, mul.lo, mad.lo?  Usage:
python3 ptx_s16.py CACHE_FILE..."""
import re
import sys

SAFE = ("add.", "sub.", "mul.lo.", "mad.lo.")


def hazards(text):
    found, taint, lines, start = [], set(), text.splitlines(), 0
    for i, line in enumerate(lines):
        if line.startswith(".visible .entry") or line.startswith(".func") or line.startswith(".entry"):
            taint, start = set(), i
        m = re.match(r"\s*([a-z][\w.]*)\s+([^,;]+)(.*)", line)
        if not m:
            continue
        op, dst, rest = m.group(1), m.group(2).strip(), m.group(3)
        if op.startswith(("neg.s16", "abs.s16")):
            taint.add(dst)
            continue
        if not any(re.search(re.escape(t) + r"(?![\w])", rest) for t in taint):
            continue
        if op.startswith(("mov.", "selp.")):
            taint.add(dst)
        elif (op.endswith(".s16") if op.startswith("cvt.") else ".s16" in op and not op.startswith(SAFE)):
            found.append(lines[start].strip() + "\n    " + "\n    ".join(l.strip() for l in lines[max(start, i - 40):i + 1]))
    return found


for path in sys.argv[1:]:
    text = open(path, "rb").read().decode("latin-1")
    bad = hazards(text)
    print("%s: %d neg.s16/abs.s16, %d read as signed 16-bit%s" % (
        path.split("/")[-1], len(re.findall(r"(?:neg|abs)\.s16", text)), len(bad),
        "".join("\n  " + b for b in bad[:5])))
    for m in re.finditer(r"(?:neg|abs)\.s16[^\n]*", text):   # every one, with its function
        fn = text.rfind("entry ", 0, m.start())
        print("  %s in %s" % (m.group(0).strip(), text[fn + 6:text.find("(", fn)] if fn >= 0 else "?"))
