"""The gate's steps as JUnit XML (`--junit-xml PATH`), so that a CI system lists every test: the
conformance suite as pytest reports it (--junitxml), each replayed transcript and each explored
geometry as a test case, and a step without cases (the planted mutants, mutmut) as one case."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from paged_gate.verdict import Case, Step


def suites_of(step: Step) -> list[ET.Element]:
    """The <testsuite> elements of one step."""
    if step.junit is not None and step.junit.is_file():
        try:
            root = ET.parse(step.junit).getroot()
        except ET.ParseError:
            pass
        else:
            suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
            for suite in suites:
                suite.set("name", step.name)
            if suites and not step.ok and not any(root.iter("failure")) and not any(root.iter("error")):
                # the suite did not run to a verdict (a usage or collection error): say so as a case
                ET.SubElement(ET.SubElement(suites[0], "testcase", classname=step.name, name="verdict"), "error", message=step.detail[:200]).text = step.detail
            if suites:
                return suites
    cases = step.cases or [Case(step.name, step.name, step.seconds, failure=None if step.ok else step.detail)]
    suite = ET.Element(
        "testsuite", name=step.name, tests=str(len(cases)), failures=str(sum(c.failure is not None for c in cases)),
        errors="0", skipped=str(sum(c.skipped is not None for c in cases)), time=f"{step.seconds:.3f}",
    )
    for case in cases:
        element = ET.SubElement(suite, "testcase", classname=case.classname, name=case.name, time=f"{case.seconds:.3f}")
        if case.failure is not None:
            ET.SubElement(element, "failure", message=case.failure.splitlines()[0] if case.failure else "failed").text = case.failure
        elif case.skipped is not None:
            ET.SubElement(element, "skipped", message=case.skipped)
    return [suite]


def write(path: Path, steps: list[Step]) -> None:
    """Every step's suites under one <testsuites> root, at path."""
    root = ET.Element("testsuites")
    for step in steps:
        root.extend(suites_of(step))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
