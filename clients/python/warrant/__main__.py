# SPDX-License-Identifier: BSD-2-Clause
"""python3 -m warrant keygen [--alg ES256|RS256|HS256] [--kid KID] [--out PREFIX]"""
import sys

from .keygen import main

if len(sys.argv) < 2 or sys.argv[1] != "keygen":
    print("usage: python3 -m warrant keygen [--alg ES256|RS256|HS256] [--kid KID] "
          "[--out PREFIX]", file=sys.stderr)
    sys.exit(2)
sys.exit(main(sys.argv[2:]))
