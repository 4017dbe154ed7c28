"""What each method measures, in the words a reviewer needs: the computation, the
source, and how to read the headline. Shown in the report's method section."""

from __future__ import annotations

METHODS: dict[str, dict[str, str]] = {
    "bias_score": {
        "name": "Token-probability bias score",
        "source": "Nangia et al. 2020 (CrowS-Pairs); Felkner et al. 2023 (WinoQueer); as compared in "
                  "'Textual Entailment is not a Better Bias Metric than Token Probability'.",
        "computes": "Each stimulus is a minimal pair: a sentence that stereotypes a group and one that does not. "
                    "The model scores both (sum of token log-probabilities: all tokens for ar_full, the shared "
                    "tokens for ar_shared, masked pseudo-log-likelihood of the shared tokens for pll_shared). The "
                    "bias score is the percentage of pairs where the stereotyping sentence scores higher, ties "
                    "counted in N.",
        "reading": "50 is parity. Distance from 50 in either direction is bias. Intervals are Wilson 95% on the "
                   "share of pairs.",
    },
    "pivotal_perplexity": {
        "name": "Pivotal-token perplexity",
        "source": "Prins et al., 'Is my model perplexed for the right reason?'",
        "computes": "Each stimulus is a pair of sentences differing in a few pivotal words, placed in labelled "
                    "frames (4 wordings x 2 orders). The correctly and incorrectly labelled prompts are compared "
                    "token by token; each token's share of the perplexity difference is summed by class (pivotal, "
                    "period, other) as a plain and a normalized proportion; accuracy is the share of prompt pairs "
                    "where the correct prompt has the lower perplexity.",
        "reading": "Normalized proportion above 0 for pivotal tokens means the model is perplexed for the right "
                   "reason. Intervals: cluster bootstrap over stimuli.",
    },
    "nli_bias": {
        "name": "NLI bias scores (M1-M11)",
        "source": "'Textual Entailment is not a Better Bias Metric than Token Probability'.",
        "computes": "A premise is paired with a stereotyping and a counter-stereotyping hypothesis; an NLI "
                    "classifier gives entailment, neutral and contradiction probabilities for each. Eleven "
                    "metrics count the triples where the stereotyping hypothesis looks more entailed (M1, M5-M9, "
                    "on the token-probability scale) or looks biased on its own (M2-M4, M10, M11).",
        "reading": "M1 and M5-M9: 50 is parity. M2-M4, M10, M11: 0 is no bias. The paper recommends M6 and M9. "
                   "NLI and token-probability scores often disagree: read them side by side.",
    },
    "tfdp": {
        "name": "TFDP single-token disparity probing",
        "source": "Singh et al., 'TFDP: Token-Efficient Disparity Audits for Autoregressive LLMs'.",
        "computes": "Each stimulus is a pair of sentences S and S' with one masked word; the model answers with a "
                    "single token (sampled n times, or its next-token distribution). Answers are embedded; PS is "
                    "the difference in alignment with the expected words, PSD the distance between the two answer "
                    "distributions (power-cosine kernel), and WFS = (1 - lambda) PS + lambda sign(PS) PSD.",
        "reading": "Parity tasks: 0 is ideal. Factuality tasks: positive means the factual sentence is aligned "
                   "better. Intervals: t over pairs.",
    },
    "fisco": {
        "name": "FiSCo group counterfactual fairness",
        "source": "Xu et al., 'Quantifying Fairness in LLMs Beyond Tokens' (FiSCo).",
        "computes": "Each question is asked once per person of each group; long answers are split into claims "
                    "and every claim is checked by NLI against every other answer. Similarity is the weighted "
                    "share of entailed, neutral and contradicted claims. A question is flagged when answers across "
                    "groups are significantly less similar than answers within groups (Welch's t, Holm-corrected).",
        "reading": "The headline is the share of flagged questions (lower is better), with a Wilson 95% interval.",
    },
    "biaxis": {
        "name": "BiAxisAudit prompt grid with split coding",
        "source": "Gan, Dong and Li, 'BiAxisAudit: ... Prompt Sensitivity and Response-Layer Divergence'.",
        "computes": "Statements are asked under a grid of prompt conditions (task, perspective, role, sentiment). "
                    "Each answer is coded on two layers: the selection (what the answer chooses, by rules with an "
                    "LLM parser fallback) and the elaboration (what the text endorses, by a judge panel). BER_sel, "
                    "BER_elab and BER_union are endorsement rates; IR is the share where the layers disagree and "
                    "DNI = BER_sel - BER_elab its direction.",
        "reading": "BER_union is the deployment gate (lower is better). Spread across conditions shows how much "
                   "the number depends on the prompt. Per-cell Wilson intervals; pooled intervals cluster-bootstrap "
                   "over statements.",
    },
}


def method_text(metric_name: str) -> dict[str, str]:
    return METHODS.get(metric_name, {"name": metric_name, "source": "", "computes": "", "reading": ""})
