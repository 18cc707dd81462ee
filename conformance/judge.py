#!/usr/bin/env python3
"""The verdict on one extension scenario's run, by its own checks.

Forced against a server that does not declare an extension, every check of
an extension scenario is SKIPPED, yet the suite reports "Passed: 1/1": its
own `wire-schema-valid` check is the one that passed. So scripts/conformance.sh
judges every extension scenario (tasks and Skills alike) here, from its
checks.json: it passes only when its own checks ran, that is at least one
SUCCESS among them, none FAILURE, none SKIPPED (WARNING and INFO are shown,
not failed). `wire-schema-valid` is the suite's, never the scenario's own: it
does not count as a SUCCESS, though its FAILURE fails the run like any other.

    judge.py DIR SCENARIO   prints `PASS <summary>` or `FAIL <reason>` for the
                            runs of SCENARIO under DIR (the suite's -o DIR);
                            exits 0 on PASS, 1 on FAIL
    judge.py --self-test    the control: planted runs, each judged as it must
                            be (all SKIPPED but `wire-schema-valid` must fail);
                            exits 0 when every one is
"""

import json
import os
import re
import sys
import tempfile

# The checks the suite adds to every scenario: never a scenario's own.
SUITE_CHECKS = {"wire-schema-valid"}

RUN_DIR = re.compile(r"^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


def checks_of(directory, scenario):
    """Every check of every run of `scenario` under `directory`."""
    checks = []
    if not os.path.isdir(directory):
        return checks
    for entry in sorted(os.listdir(directory)):
        m = RUN_DIR.match(entry)
        path = os.path.join(directory, entry, "checks.json")
        if m and m.group(1) == scenario and os.path.exists(path):
            with open(path) as f:
                checks.extend(json.load(f))
    return checks


def verdict(checks):
    """(passed, why) for one scenario's checks."""
    def ids(status, among):
        return sorted({c.get("id", "?") for c in among if c.get("status") == status})

    own = [c for c in checks if c.get("id") not in SUITE_CHECKS]
    failed = ids("FAILURE", checks)
    if failed:
        return False, "FAILURE: " + ", ".join(failed)
    skipped = ids("SKIPPED", own)
    if skipped:
        return False, "SKIPPED (its checks did not run): " + ", ".join(skipped)
    succeeded = [c for c in own if c.get("status") == "SUCCESS"]
    if not succeeded:
        return False, "no check of its own succeeded ({} of its own, {} in all)".format(
            len(own), len(checks)
        )
    others = [c for c in own if c.get("status") != "SUCCESS"]
    note = ""
    if others:
        note = "; also " + ", ".join(
            "{} {}".format(c.get("status"), c.get("id")) for c in others
        )
    return True, "{} checks of its own succeeded{}".format(len(succeeded), note)


def check(cid, status):
    return {"id": cid, "status": status}


# The control: (name, checks planted, must pass).
PLANTED = [
    (
        "all its checks SKIPPED, the suite's wire-schema-valid SUCCESS",
        [check("sep-2640-skills-list-implemented", "SKIPPED"),
         check("sep-2640-skills-get-implemented", "SKIPPED"),
         check("wire-schema-valid", "SUCCESS")],
        False,
    ),
    ("only wire-schema-valid", [check("wire-schema-valid", "SUCCESS")], False),
    ("no checks at all", [], False),
    (
        "one of its checks FAILURE",
        [check("a", "SUCCESS"), check("b", "FAILURE"), check("wire-schema-valid", "SUCCESS")],
        False,
    ),
    (
        "one of its checks SKIPPED",
        [check("a", "SUCCESS"), check("b", "SKIPPED"), check("wire-schema-valid", "SUCCESS")],
        False,
    ),
    (
        "wire-schema-valid FAILURE",
        [check("a", "SUCCESS"), check("wire-schema-valid", "FAILURE")],
        False,
    ),
    ("its checks only WARNING", [check("a", "WARNING"), check("wire-schema-valid", "SUCCESS")], False),
    (
        "its checks SUCCESS",
        [check("a", "SUCCESS"), check("b", "SUCCESS"), check("wire-schema-valid", "SUCCESS")],
        True,
    ),
    (
        "its checks SUCCESS and a WARNING",
        [check("a", "SUCCESS"), check("b", "WARNING"), check("wire-schema-valid", "SUCCESS")],
        True,
    ),
]


def self_test():
    """Plants each run as the suite writes it and judges it from disk."""
    wrong = []
    with tempfile.TemporaryDirectory(prefix="wymcp-judge-") as directory:
        for i, (name, checks, must_pass) in enumerate(PLANTED):
            scenario = "planted-{}".format(i)
            run = os.path.join(directory, "server-{}-2026-07-28T00-00-00-000Z".format(scenario))
            os.makedirs(run)
            with open(os.path.join(run, "checks.json"), "w") as f:
                json.dump(checks, f)
            passed, why = verdict(checks_of(directory, scenario))
            if passed != must_pass:
                wrong.append("{}: judged {} ({})".format(name, "PASS" if passed else "FAIL", why))
    if wrong:
        print("FAIL " + "; ".join(wrong))
        return 1
    print("PASS {} planted runs judged as they must be".format(len(PLANTED)))
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    passed, why = verdict(checks_of(argv[1], argv[2]))
    print(("PASS " if passed else "FAIL ") + why)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
