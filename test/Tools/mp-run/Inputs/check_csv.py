"""Checks a CSV log of mp-run --train (train.test).

  check_csv.py FILE [--header H] [--rows N] [--falls COLUMN RATIO]
               [--max COLUMN V] [--min COLUMN V] [--all COLUMN V]
               [--count COLUMN V N] [--nonfinite COLUMN N]

--falls: the last value of COLUMN is at most RATIO times the first;
--max / --min: the last value is at most / at least V;
--all: every value of COLUMN is the text V;
--count: N values of COLUMN are the text V;
--nonfinite: N values of COLUMN are inf, -inf or nan (which of them an
  overflow ends as depends on the order and kind of the operations that
  overflow, e.g. whether the BLAS kernel fuses multiply and add).
Prints "ok" or fails with the reason.
"""
import csv
import math
import sys

path = sys.argv[1]
with open(path, newline="") as f:
    text = f.read()
rows = list(csv.DictReader(text.splitlines()))
args = sys.argv[2:]


def fail(message):
    sys.exit("%s: %s" % (path, message))


def column(name):
    if not rows or name not in rows[0]:
        fail("no column %r" % name)
    return [r[name] for r in rows]


while args:
    option = args.pop(0)
    if option == "--header":
        header = args.pop(0)
        if text.splitlines()[0] != header:
            fail("header %r, expected %r" % (text.splitlines()[0], header))
    elif option == "--rows":
        n = int(args.pop(0))
        if len(rows) != n:
            fail("%d rows, expected %d" % (len(rows), n))
    elif option == "--falls":
        name, ratio = args.pop(0), float(args.pop(0))
        values = [float(v) for v in column(name)]
        if not values[-1] <= ratio * values[0]:
            fail("%s went from %g to %g, not below %g times the first" %
                 (name, values[0], values[-1], ratio))
    elif option in ("--max", "--min"):
        name, limit = args.pop(0), float(args.pop(0))
        last = float(column(name)[-1])
        if (option == "--max" and last > limit) or (option == "--min" and last < limit):
            fail("the last %s is %g (%s %g)" % (name, last, option[2:], limit))
    elif option == "--all":
        name, value = args.pop(0), args.pop(0)
        if any(v != value for v in column(name)):
            fail("%s is not always %r: %r" % (name, value, column(name)))
    elif option == "--count":
        name, value, n = args.pop(0), args.pop(0), int(args.pop(0))
        got = sum(v == value for v in column(name))
        if got != n:
            fail("%s is %r %d times, expected %d: %r" % (name, value, got, n, column(name)))
    elif option == "--nonfinite":
        name, n = args.pop(0), int(args.pop(0))
        got = sum(not math.isfinite(float(v)) for v in column(name) if v != "")
        if got != n:
            fail("%s is not finite %d times, expected %d: %r" % (name, got, n, column(name)))
    else:
        fail("unknown option %r" % option)
print("ok")
