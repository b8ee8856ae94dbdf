#!/usr/bin/env python3
"""Where one command's instructions go, from a callgrind.out that
bench/callgrind.sh kept (KEEP=1): Redis's own dispatch around the module,
each Redis module API function the module called (inclusive of everything
it did inside Redis), the module's heap allocations (Rust's allocator goes
through RM_Alloc/RM_Free), and the module's own code (the rest).

    KEEP=1 bench/callgrind.sh DREAMS.RECORD bench web 1 1 0   # prints the file
    python3 bench/budget.py <callgrind.out> <calls> [--top 25]

<calls> is the number of calls the file holds (callgrind.sh's N plus the
3 setup calls it makes). Figures are instructions per call.
"""

import argparse
import collections
import re

MODULE = "libdreamtown"
ALLOCATOR = {"RM_Alloc", "RM_Free", "RM_Realloc", "RM_Calloc"}


def parse(path):
    """Calls between functions: {(caller object, caller, callee object, callee): inclusive cost}."""
    names = {"ob": {}, "fn": {}}

    def name(kind, text):
        match = re.match(r"\((\d+)\)(?: (.*))?", text)
        if not match:
            return text
        if match.group(2):
            names[kind][match.group(1)] = match.group(2)
        return names[kind].get(match.group(1), text)

    costs = collections.Counter()
    ob = fn = None
    cob = cfn = None
    pending = False
    with open(path) as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("ob="):
                ob = name("ob", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
                cob = None
            elif line.startswith("cob="):
                cob = name("ob", line[4:])
            elif line.startswith("cfn="):
                cfn = name("fn", line[4:])
            elif line.startswith("calls="):
                pending = True
            elif pending:
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                costs[(ob, fn, cob or ob, cfn)] += cost
                pending = False
                cob = None
    return costs


def total(path):
    with open(path) as handle:
        for line in handle:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit("no totals in " + path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("callgrind_out")
    parser.add_argument("calls", type=int)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    costs = parse(args.callgrind_out)
    everything = total(args.callgrind_out)
    is_module = lambda obj: obj is not None and MODULE in obj
    entry = sum(cost for (ob, _, cob, _), cost in costs.items() if not is_module(ob) and is_module(cob))
    api = collections.Counter()
    for (ob, _, cob, callee), cost in costs.items():
        if is_module(ob) and not is_module(cob) and callee and not callee.startswith("0x"):
            if "libc.so" in (cob or "") or "ld-linux" in (cob or ""):
                continue
            api[callee] += cost
    allocation = sum(cost for callee, cost in api.items() if callee in ALLOCATOR)
    in_api = sum(cost for callee, cost in api.items() if callee not in ALLOCATOR)
    per = lambda cost: cost / args.calls
    print(f"instructions per call under processCommand: {per(everything):,.0f}")
    print(f"  Redis around the module (parse, lookup, call(), propagation, reply buffer): {per(everything - entry):,.0f}")
    print(f"  Redis module API calls made by the module:                                 {per(in_api):,.0f}")
    print(f"  module heap allocations (Rust allocator -> RM_Alloc/RM_Free):             {per(allocation):,.0f}")
    print(f"  module's own code (parsing, logic, formatting, libc memcpy):              {per(entry - in_api - allocation):,.0f}")
    print("API functions, inclusive:")
    for callee, cost in api.most_common(args.top):
        if callee not in ALLOCATOR:
            print(f"  {per(cost):8,.0f}  {callee}")


if __name__ == "__main__":
    main()
