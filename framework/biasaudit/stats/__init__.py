"""Shared statistics: every reported number is an `Estimate` (value, interval, n, method).

Intervals (Wilson, bootstrap percentile/BCa, cluster bootstrap, differences), tests
(Welch, paired t, Wilcoxon, permutation, Siegel-Tukey, Holm, BH), correlation and
linear fit, effect sizes, agreement, mutual information, sample-size planning.
"""

from biasaudit.records.estimate import Estimate, Spread
from biasaudit.stats.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha_nominal
from biasaudit.stats.bootstrap import bootstrap, bootstrap_difference, cluster_bootstrap
from biasaudit.stats.contrasts import MAX_GROUPS, Contrast, ContrastFamily, pairwise_contrasts
from biasaudit.stats.correlation import LinearFit, correlation, linear_fit
from biasaudit.stats.effects import (
    TwoWayEta,
    cohens_d,
    eta_squared,
    eta_squared_two_way,
    variance_ratio,
)
from biasaudit.stats.information import mutual_information
from biasaudit.stats.means import mean_t
from biasaudit.stats.proportions import (
    sample_size_for_half_width,
    wilson,
    wilson_clustered,
    wilson_half_width,
)
from biasaudit.stats.significance import (
    TestResult,
    benjamini_hochberg,
    holm,
    paired_t,
    permutation_test,
    siegel_tukey,
    siegel_tukey_ranks,
    welch_t,
    wilcoxon_signed_rank,
)
from biasaudit.stats.spread import cell_spread

__all__ = [
    "MAX_GROUPS",
    "Contrast",
    "ContrastFamily",
    "pairwise_contrasts",
    "Estimate",
    "Spread",
    "cell_spread",
    "LinearFit",
    "TestResult",
    "TwoWayEta",
    "benjamini_hochberg",
    "bootstrap",
    "bootstrap_difference",
    "cluster_bootstrap",
    "cohen_kappa",
    "cohens_d",
    "correlation",
    "eta_squared",
    "eta_squared_two_way",
    "fleiss_kappa",
    "holm",
    "krippendorff_alpha_nominal",
    "linear_fit",
    "mean_t",
    "mutual_information",
    "paired_t",
    "permutation_test",
    "sample_size_for_half_width",
    "siegel_tukey",
    "siegel_tukey_ranks",
    "variance_ratio",
    "welch_t",
    "wilcoxon_signed_rank",
    "wilson",
    "wilson_clustered",
    "wilson_half_width",
]
