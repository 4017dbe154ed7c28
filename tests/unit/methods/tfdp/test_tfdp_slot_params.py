"""The `tfdp` metric's slot parameters against the probe and its `tfdp_vectors` layer:
every way they can disagree is refused at validate (one line naming the spec file, the
key path and a fix, exit 2), never a KeyError traceback from the metric's embedding
lookup (the metric aligns texts whose vectors only the layer holds)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import isolation

REPO = Path(__file__).resolve().parents[4]
SPEC = REPO / "specs" / "tfdp_gender.yaml"

CASES = [
    # a slot the probe does not have: the metric would score no pair at all
    (("+metrics.0.slot=t",), "metrics[0].slot", "names probe slot 't', which the probe does not have"),
    # both sides the same slot: a sentence's answers against themselves
    (("+metrics.0.counter_slot=s",), "metrics[0].counter_slot", "as `slot` does"),
    # the slots swapped against the layer's maps (the bug report)
    (("+metrics.0.slot=s_prime", "+metrics.0.counter_slot=s"), "metrics[0].slot",
     "aligns slot 's_prime' with fields 's' (sentence) and 'w_orig' (truth), but coding layer 'vectors' embeds it "
     "with 's_prime' and 'w_prime_orig'"),
    # one field of one side set apart from the layer
    (("+metrics.0.sentence=s_prime",), "metrics[0].sentence", "coding layer 'vectors' embeds it with 's' and"),
    (("+metrics.0.truth=w_prime_orig",), "metrics[0].truth", "embeds it with 's' and 'w_orig'"),
    (("+metrics.0.counter=s",), "metrics[0].counter", "embeds it with 's_prime' and 'w_prime_orig'"),
    (("+metrics.0.counter_truth=w_orig",), "metrics[0].counter_truth", "embeds it with 's_prime' and"),
    (("+metrics.0.sentence=nosuch",), "metrics[0].sentence", "fields 'nosuch' (sentence)"),
    # a layer that is not a tfdp_vectors layer holds no vectors
    (("+coding.other={coder: rules, rules: [{label: A, pattern: x}]}", "+metrics.0.layer=other"), "metrics[0].layer",
     "a 'rules' layer, not tfdp_vectors"),
]


def _refused(code: int, err: str, key: str, text: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err and "KeyError" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert f"{SPEC}: {key}: " in line or f"tfdp_gender.yaml: {key}: " in line, line
    assert text in line and "(hint: " in line, line


@pytest.mark.parametrize(("overrides", "key", "text"), CASES, ids=[c[1] + ":" + c[0][-1] for c in CASES])
def test_validate_refuses(cli, workdir: Path, overrides: tuple[str, ...], key: str, text: str) -> None:  # type: ignore[no-untyped-def]
    code, _out, err = cli("validate", "spec=tfdp_gender", *overrides, *isolation(workdir))
    _refused(code, err, key, text)


def test_swapped_slots_never_reach_the_metric(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    # on the code before the check: a KeyError traceback from the metric's lookup, exit 70
    code, _out, err = cli("selftest", "spec=tfdp_gender", "+metrics.0.slot=s_prime", "+metrics.0.counter_slot=s",
                          *isolation(workdir))
    _refused(code, err, "metrics[0].slot", "aligns slot 's_prime'")


def test_a_slot_the_layer_does_not_embed(cli, workdir: Path) -> None:  # type: ignore[no-untyped-def]
    d = yaml.safe_load(SPEC.read_text())
    d["stimuli"]["source"] = str(SPEC.parent / d["stimuli"]["source"])
    d["coding"]["vectors"]["sentence"] = {"s": "s"}  # the layer embeds S only
    d["coding"]["vectors"]["truth"] = {"s": "w_orig"}
    spec = workdir / "tfdp_one_slot.yaml"
    spec.write_text(yaml.safe_dump(d))
    for command in ("validate", "selftest"):
        code, _out, err = cli(command, f"spec={spec}", *isolation(workdir))
        assert code == 2, err
        assert "Traceback" not in err
        [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
        assert f"{spec}: metrics[0].counter_slot: names slot 's_prime', which coding layer 'vectors' does not " \
               f"embed" in line and "(hint: add `coding.vectors.sentence.s_prime`" in line, line


def test_a_failed_embedding_leaves_its_pair_unscorable(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit whose embedding failed has no vectors in the layer: its pair is listed as
    unscorable with the reason, the other pairs are scored (before: a KeyError)."""
    from biasaudit.methods.tfdp import coder
    from biasaudit.records.codes import Code, CodeDetail
    from biasaudit.runner.pipeline import prepare
    from biasaudit.runner.selftest import _oracle_for, run_oracle
    from biasaudit.spec.compose import compose

    real = coder.TFDPVectorsCoder.code

    def pair_0_fails(self, units, inputs, answers):  # type: ignore[no-untyped-def]
        # every answer of pair "0" (the layer pools vectors by text, so one sample's failure
        # is covered by an equal answer's vectors)
        out = real(self, units, inputs, answers)
        return [Code(unit=c.unit, status="failed", source="tfdp_vectors", detail=CodeDetail(reason="embedding failed"))
                if u.stimulus == "0" else c for u, c in zip(units, out, strict=True)]

    monkeypatch.setattr(coder.TFDPVectorsCoder, "code", pair_0_fails)
    prep = prepare(compose(["spec=tfdp_gender", *isolation(workdir)]))
    oracle, params = _oracle_for(prep)
    res = run_oracle(prep, oracle, params, "planted")[0]["tfdp"]
    assert res.counts["pairs"] == 16 and res.counts["scored"] == 15 and res.counts["unscorable"] == 1
    [why] = res.detail["unscorable"]
    assert why["stimulus"] == "0" and "holds no embedding of" in why["reason"]
    assert res.estimates["WFS"].n == 15
