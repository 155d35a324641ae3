"""``gangsched explain WORKLOAD -f ...``: one workload's decision, step by step.

The inputs are placed exactly as ``gangsched place`` places them (same files, same
``-n``/``-l``), so the verdict is the one ``place`` prints. Then the decision of the
workload's minimum is made again on the cluster as it was at its turn (the minimums of
the workloads before it placed, in the order and with the options ``place`` decided
them: :func:`gangsched.batch.decision_order`), with the engine's search
recorded (:mod:`gangsched.placement.engine.trace`): per attempt, for every group of the
tree and every topology level it was offered, the candidate domains, which the capacity
bound cut and how close each came, which were dry-run and whether the group's minimum
fit there, and the best one.
"""

from __future__ import annotations

import dataclasses
import json
from enum import StrEnum
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gangsched.api.errors import InputError
from gangsched.cli.common import (
    AllNamespacesOption,
    FilesOption,
    IgnoreUnknownOption,
    NamespaceOption,
    RecursiveOption,
    SelectorOption,
    TopologyOption,
    ValidateOption,
    VerboseOption,
    error,
    input_files,
    out,
    plain,
)
from gangsched.cli.place import REJECTED_EXIT, plan_chain, run_place
from gangsched.cli.result import INVALID, WorkloadResult
from gangsched.cli.select import Scope, split_name

if TYPE_CHECKING:  # the engine is imported where used: `gangsched --help` stays light
    from gangsched.placement.engine.trace import AttemptLog, DomainLog, SearchLog, TierLog

ROWS = 8  # domains listed per level without -v


class Format(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"


def find(results: list[WorkloadResult], text: str, namespace: str | None) -> int:
    """The index of the workload ``text`` names: ``Kind/name``, ``kind.group/name``,
    ``namespace/name`` or ``name``, in ``namespace`` when given."""
    kind, sep, name = text.partition("/")
    if not sep:
        kind, name = "", text
    kinds = {r.kind.lower() for r in results}
    if kind and kind.split(".")[0].lower() not in kinds:  # namespace/name
        if "/" in name:  # KIND/NAMESPACE/NAME
            raise InputError(f"no workload of kind {kind!r} in the inputs (in "
                             f"{text!r}); there are {', '.join(sorted(kinds)) or 'none'}")
        namespace, kind = kind, ""
    if "/" in name:
        namespace, name = split_name(name)
    wanted = kind.split(".")[0].lower()
    found = [i for i, r in enumerate(results)
             if r.name == name and (not wanted or r.kind.lower() == wanted)
             and (namespace is None or r.namespace == namespace)]
    if len(found) == 1:
        return found[0]
    if not found:
        shown = ", ".join(f"{r.kind}/{r.name}" for r in results[:5])
        more = f" (and {len(results) - 5} more)" if len(results) > 5 else ""
        raise InputError(f"no workload {text!r} in the inputs" + (
            f" in namespace {namespace}" if namespace else "") + (
            f"; there are {shown}{more}" if results else "; there are none"))
    which = ", ".join(f"{results[i].kind}/{results[i].name} in {results[i].namespace}"
                      for i in found)
    raise InputError(f"{text!r} names several workloads ({which}): give KIND/NAME and -n")


def _reference(text: str) -> str:
    """WORKLOAD as a usage error when it cannot name one: empty, an empty part, or more
    parts than KIND/NAMESPACE/NAME."""
    parts = text.split("/")
    if len(parts) > 3 or not all(parts):
        raise typer.BadParameter(f"{text!r} is not KIND/NAME, NAMESPACE/NAME or NAME",
                                 param_hint="WORKLOAD")
    return text


def explain_cmd(
    workload: Annotated[str, typer.Argument(
        help="The workload: KIND/NAME (as place -o name prints it), NAMESPACE/NAME or NAME.",
        metavar="WORKLOAD", show_default=False, callback=_reference)],
    files: FilesOption = None,
    recursive: RecursiveOption = False,
    namespace: NamespaceOption = None,
    all_namespaces: AllNamespacesOption = False,
    selector: SelectorOption = None,
    output: Annotated[Format, typer.Option(
        "--output", "-o", help="text, or the record as json or yaml.")] = Format.text,
    topology: TopologyOption = None,
    ignore_unknown: IgnoreUnknownOption = False,
    validate: ValidateOption = None,
    verbose: VerboseOption = 0,
) -> None:
    """Explain one workload's decision step by step.

    Per attempt: every group of its gang tree and every topology level it was offered, the
    candidate domains, why the capacity bound cut each (how many pods it holds of how many
    needed), which were tried, and the best found. The inputs are placed as [bold]gangsched
    place[/] places them, so the verdict is the same; exit status as place's for this
    workload (0, 1 invalid, 3 rejected or waiting)."""
    from gangsched.batch import decide, decision_order
    from gangsched.cluster.state import ClusterState
    from gangsched.placement.engine.trace import SearchLog, recording

    scope = Scope.of(namespace, all_namespaces, selector)
    placed = run_place(input_files(None, files, recursive), scope, topology, ignore_unknown,
                       validate)
    index = find(placed.results, workload, scope.namespace)
    result = placed.results[index]
    log = SearchLog()
    before = 0
    w = placed.plan.workloads[index]
    if w.tree is not None and not w.waiting and not w.invalid:
        plan = placed.plan
        state = ClusterState.from_nodes(plan.nodes, plan_chain(plan, topology), plan.bound)
        state.note_claims(plan.claims)  # as place: bound pods hold their exclusive domains
        # the minimums, in the order and with the options place decided them
        order, _, first = decision_order(plan, state)
        for i in order:
            if i == index:
                with recording(log):
                    decide(w, state, first)
                break
            decide(plan.workloads[i], state, first)
            before += 1
    if output is Format.text:
        print_text(result, log, before, verbose)
    else:
        data = {"workload": {"kind": result.kind, "namespace": result.namespace,
                             "name": result.name, "status": result.status,
                             "reason": result.reason},
                "placedBefore": before,
                "attempts": [_attempt_dict(a) for a in log.attempts
                             if verbose or not a.explanation]}
        import yaml

        typer.echo(json.dumps(data, indent=2) if output is Format.json
                   else yaml.safe_dump(data, sort_keys=False), nl=output is Format.json)
    if result.status == INVALID:  # bad input: one line naming file, object and field
        error(result.reason)
        raise typer.Exit(1)
    if not result.ok:
        raise typer.Exit(REJECTED_EXIT)


def _attempt_dict(a: AttemptLog) -> dict[str, Any]:
    return {"number": a.number, "nodeOrder": "pack" if a.pack else "spread",
            "minimum": "own" if a.whole else "implied" if a.implied else "raised",
            "exactSolver": a.exact,
            "cappedFirst": a.caps_first,
            "otherWays": a.deep,
            "explanation": a.explanation,
            "levels": [{**{k: v for k, v in dataclasses.asdict(t).items() if k != "domains"},
                        "best": t.best.label if t.best else None,
                        "domains": [dataclasses.asdict(d) for d in t.domains.values()]}
                       for t in a.tiers.values()]}


# -- text ------------------------------------------------------------------------------------


def _verdict(d: DomainLog, needed: int) -> str:
    if d.placed:
        return "placed"
    if d.tried:
        return "tried: its minimum did not fit inside (a group below it did not)"
    if d.holder:
        return f"cut: held exclusively by {d.holder}"
    if not d.labelled:
        return "cut: its nodes lack the level's label"
    if not d.passed:
        if d.holds < needed:
            return f"cut: holds {d.holds} of the {needed} needed"
        return ("cut: too little room for another kind of pod, or outside a domain of its "
                "required level")
    return "passed the bound, not tried (an earlier candidate was chosen)"


def _tier_lines(t: TierLog, verbose: int) -> list[str]:
    doms = list(t.domains.values())
    passed = sum(1 for d in doms if d.passed)
    tried = sum(1 for d in doms if d.tried)
    placed = [d for d in doms if d.placed]
    best = t.best
    if t.key is None:
        d = doms[0]
        head = (f"    in its parent's domain (no topology level), searched {t.searches}x: "
                f"{_verdict(d, t.needed)}" + ("" if not d.passed or d.placed else
                                               f" (holds {d.holds} of {t.needed})"))
        return [head]
    where = (f"best: {t.level} {best.label}, holds {best.holds}" if best else "no domain")
    held = sum(1 for d in doms if d.holder)
    lines = [f"    {t.level} ({t.key}): {len(doms)} domains offered over {t.searches} "
             f"{'search' if t.searches == 1 else 'searches'}, "
             + (f"{held} held exclusively by other groups, " if held else "")
             + f"{passed} passed the capacity bound, {tried} tried, {len(placed)} placed; "
             f"{where}"]
    ranked = sorted(doms, key=lambda d: (-d.placed, -d.tried, not d.passed, bool(d.holder),
                                         -d.holds))
    shown = ranked if verbose else ranked[:ROWS]
    width = max(len(d.label) for d in shown)
    for d in shown:
        lines.append(f"      {d.label.ljust(width)}   holds {d.holds:>6}   "
                     f"{_verdict(d, t.needed)}")
    rest = ranked[len(shown):]
    if rest:
        lines.append(f"      ... {len(rest)} more, holding at most "
                     f"{max(d.holds for d in rest)} (-v lists them)")
    return lines


def _attempt_title(a: AttemptLog, last: bool, admitted: bool) -> str:
    if a.explanation:
        return ("Finding the blocking group: its children placed one by one, each beside "
                "the earlier ones")
    if a.exact:
        return (f"Attempt {a.number}: the minimum, by the exact solver over every node "
                f"its pods fit on: {'placed' if a.placed else 'no placement'}")
    what = ("the minimum" if a.whole else
            "the minimum, each child asked for what its group's pod count leaves to it"
            if a.implied else "the minimum raised toward what it asks")
    order = "pods packed onto the fullest nodes" if a.pack else "spread onto the emptiest"
    if a.caps_first:
        order += ", sets capped per node before larger siblings"
    if a.deep:
        order += ", each group's other ways tried when a later sibling fails"
    verdict = "placed" if last and admitted else "no placement"
    return f"Attempt {a.number}: {what}, {order}: {verdict}"


def print_text(result: WorkloadResult, log: SearchLog, before: int, verbose: int) -> None:
    lines = [f"{result.kind} {result.namespace}/{result.name}: {result.status}"]
    lines += [f"  {c}" for c in result.clauses]
    if result.status == INVALID or not log.attempts:
        _echo(lines)
        return
    lines.append("")
    after = ("It was the first workload decided" if not before else
             f"It was decided after the minimums of {before} workload"
             f"{'' if before == 1 else 's'} (in place's order: higher priority first, then "
             "the order that admits the most)")
    lines.append(f"{after}; its minimum needs {result.minimum} pods. Candidate domains "
                 "per group and level, narrowest level first:")
    searches = [a for a in log.attempts if not a.explanation]
    shown: list[AttemptLog] = []
    for a in log.attempts:
        if a.explanation and not verbose:
            continue
        lines.append("")
        lines.append(_attempt_title(a, a is searches[-1], result.ok))
        if a.exact:
            continue  # no candidate domains: one model over every node
        same = next((b for b in shown if b.tiers == a.tiers), None)
        if same is not None and not verbose:
            lines.append(f"  the same candidates as attempt {same.number}")
            continue
        shown.append(a)
        node = None
        for t in a.tiers.values():
            if t.node != node:
                lines.append(f"  {t.node}: needs {t.needs}")
                node = t.node
            lines += _tier_lines(t, verbose)
    if result.ok:
        placed = [f"  {g.path}: {g.domain}" for g in result.groups if g.domain]
        if placed:
            lines += ["", "Domains chosen:", *placed]
    elif not verbose and any(a.explanation for a in log.attempts):
        lines += ["", "(-v also shows the dry runs that found the blocking group)"]
    _echo(lines)


def _echo(lines: list[str]) -> None:
    text = "\n".join(lines)
    if plain():
        typer.echo(text)
    else:
        from rich.markup import escape

        out().print(escape(text), soft_wrap=True, highlight=False)
