#!/usr/bin/env python3
"""Lines per source file and per function, the longest first.

    tools/code_metrics.py [--top N] [DIR ...]     (default: engine ui app, top 10)

Measures what issue #22 asks for: no file over ~800 lines, no function over ~100.
Functions are found by a brace-matching heuristic over .cpp files, not by a C++
parser: comments, string and character literals and preprocessor lines are blanked
first, then a brace at namespace or class level whose header has a parameter list
opens a function. A function's length runs from the line its name is on to the line
of its closing brace. Lambdas and local classes count towards the function they are in.
"""
import argparse
import os
import re
import sys

SOURCE_SUFFIXES = (".cpp", ".h")
FUNCTION_SUFFIXES = (".cpp",)


def blank(text):
    """Text with comments, literals and preprocessor lines replaced by spaces (newlines kept),
    so that braces and parentheses in them do not count."""
    out = []
    i, n = 0, len(text)
    at_line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            at_line_start = True
            continue
        if at_line_start and c in " \t":
            out.append(c)
            i += 1
            continue
        if at_line_start and c == "#":  # a directive, with its continuation lines
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out.append(" \n")
                    i += 2
                    continue
                out.append(" ")
                i += 1
            continue
        at_line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out.append(" ")
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        raw = re.match(r'(?:u8|u|U|L)?R"([^()\\ ]{0,16})\(', text[i:i + 24])
        if raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + raw.group(1) + '"'
            end = text.find(close, i + raw.end())
            end = n if end < 0 else end + len(close)
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
            continue
        if c == "'" and i > 0 and text[i - 1].isalnum() and i + 1 < n and text[i + 1].isalnum():
            out.append(" ")  # a digit separator: 1'000
            i += 1
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def function_name(header):
    """The qualified name before the parameter list of a function header, or None if the
    header is not a function's (a variable, an initializer, a control statement)."""
    # Skip template heads, attributes and the part after the parameter list.
    depth = 0
    for k, ch in enumerate(header):
        if ch in "<[":
            depth += 1
        elif ch in ">]":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0 and not header[k - 1:k + 1] in ("<=", ">=", "!=", "==") \
                and not header[k:k + 2] == "==" and "operator" not in header[max(0, k - 10):k]:
            if header.find("(") < 0 or header.find("(") > k:
                return None  # `T x = ...{` : an initializer, not a function
        elif ch == "(" and depth == 0:
            before = header[:k].rstrip()
            m = re.search(r"((?:[A-Za-z_~][\w]*\s*(?:<[^<>()]*>)?\s*::\s*)*"
                          r"(?:operator\s*(?:\(\)|[^\w\s(]+|\w[\w\s:*&<>]*)|~?[A-Za-z_]\w*))$", before)
            if not m:
                return None
            name = re.sub(r"\s+", "", m.group(1))
            if name in ("if", "for", "while", "switch", "catch", "return", "sizeof", "decltype"):
                return None
            return name
    return None


def functions(path):
    """(name, first line, last line) of each function defined in a .cpp file."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    found = []
    # scopes functions may start in: namespaces, extern blocks and class bodies (named, so
    # that a member defined in its class reads Class::member)
    scope = []
    header_start = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in ";":
            header_start = i + 1
        elif c == "}":
            if scope:
                scope.pop()
            header_start = i + 1
        elif c == "{":
            header = text[header_start:i]
            kind = None
            owner = ""
            if re.search(r"\b(namespace|extern)\b", header) and "(" not in header:
                kind = "ns"
            elif re.match(r"\s*(template\s*<.*>\s*)?(class|struct|union)\b", header, re.S) and \
                    "(" not in header.split(":")[0]:
                kind = "ns"
                m = re.search(r"\b(?:class|struct|union)\s+(?:\w+\s+)*?([A-Za-z_]\w*)\s*(?:final\s*)?(?::|$)",
                              header.strip())
                owner = m.group(1) if m else ""
            elif re.match(r"\s*(enum)\b", header):
                kind = "skip"
            name = function_name(header) if kind is None else None
            if kind is None and name:
                # A constructor's member initializers (`: a_{x}, b_(y)`) precede the body:
                # the body's brace follows a `)` or `}`, an initializer's follows a name.
                body = i
                while re.search(r"[\w>]\s*$", text[header_start:body]) and \
                        re.search(r"\)\s*:", text[header_start:body]):
                    body = match_brace(text, body) + 1
                    nxt = text.find("{", body)
                    if nxt < 0:
                        break
                    body = nxt
                end = match_brace(text, body)
                name_pos = header_start + header.find("(")  # the line of the parameter list
                first = text.count("\n", 0, name_pos) + 1
                last = text.count("\n", 0, end) + 1
                owners = [o for o in scope if o]
                found.append(("::".join(owners + [name]), first, last))
                i = end + 1
                header_start = i
                continue
            if kind == "ns":
                scope.append(owner)
                header_start = i + 1
            else:
                # An initializer or anything else at this level: skip it whole.
                i = match_brace(text, i) + 1
                header_start = i
                continue
        i += 1
    return found


def match_brace(text, i):
    """The index of the brace closing the one at i."""
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="*", default=["engine", "ui", "app"])
    ap.add_argument("--top", type=int, default=10)
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    files = []
    for d in args.dirs:
        base = d if os.path.isabs(d) else os.path.join(root, d)
        for dirpath, _, names in os.walk(base):
            files += [os.path.join(dirpath, x) for x in names if x.endswith(SOURCE_SUFFIXES)]
    files.sort()

    def rel(p):
        return os.path.relpath(p, root)

    sizes = []
    for p in files:
        with open(p, encoding="utf-8", errors="replace") as f:
            sizes.append((sum(1 for _ in f), rel(p)))
    sizes.sort(key=lambda s: (-s[0], s[1]))
    print(f"Longest files ({len(sizes)} files, {sum(s[0] for s in sizes)} lines):")
    for lines, p in sizes[:args.top]:
        print(f"  {lines:5d}  {p}")

    funcs = []
    for p in files:
        if p.endswith(FUNCTION_SUFFIXES):
            funcs += [(last - first + 1, name, rel(p), first) for name, first, last in functions(p)]
    funcs.sort(key=lambda f: (-f[0], f[2], f[3]))
    over100 = sum(1 for f in funcs if f[0] > 100)
    over150 = sum(1 for f in funcs if f[0] > 150)
    print(f"Longest functions ({len(funcs)} functions; {over150} over 150 lines, {over100} over 100):")
    for lines, name, p, first in funcs[:args.top]:
        print(f"  {lines:5d}  {name}  ({p}:{first})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
