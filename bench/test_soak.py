"""bench/soak's growth rule on synthetic samples: what passes, what fails."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
_loader = importlib.machinery.SourceFileLoader("soak",
                                               os.path.join(HERE, "soak"))
_spec = importlib.util.spec_from_loader("soak", _loader)
assert _spec is not None
soak = importlib.util.module_from_spec(_spec)
sys.modules["soak"] = soak  # dataclasses look their module up
_loader.exec_module(soak)

# 600 s, compared windows [150, 270) and [480, 600), settle 10 s.
RULE = soak.Window(warmup=150, window=120, duration=600, settle=10, limit=0.10)


def run(rss, fds=lambda t: 40, threads=lambda t: 20, restart_every=60,
        series="daemon", interval=2):
    """Samples of one node restarted every `restart_every` s, each figure
    a function of the run's time."""
    samples = []
    for step in range(int(600 / interval)):
        t = step * interval
        incarnation = int(t // restart_every)
        samples.append(soak.Sample(t, "n0", 1000 + incarnation, series,
                                   t - incarnation * restart_every,
                                   int(rss(t)), int(fds(t)), int(threads(t))))
    return samples


def test_flat_figures_pass():
    results, failures = soak.growth_report(run(lambda t: 30_000), RULE)
    assert failures == []
    assert {(g.figure, g.growth) for g in results} == {
        ("rss_kb", 0.0), ("fds", 0.0), ("threads", 0.0)}


def test_rss_that_grows_over_the_limit_fails():
    # 30 MB at 150 s, +20 % by the end: a leak of 10 kB/s.
    _, failures = soak.growth_report(run(lambda t: 28_500 + 10 * t), RULE)
    assert len(failures) == 1 and "daemon rss_kb grew" in failures[0]


def test_growth_just_under_the_limit_passes():
    # 5 % from one window's median to the other's.
    results, failures = soak.growth_report(
        run(lambda t: 30_000 if t < 300 else 31_500), RULE)
    assert failures == []
    assert [round(g.growth, 3) for g in results if g.figure == "rss_kb"] == [0.05]


def test_descriptors_and_threads_are_judged_as_rss_is():
    _, failures = soak.growth_report(
        run(lambda t: 30_000, fds=lambda t: 40 if t < 300 else 60,
            threads=lambda t: 20 if t < 300 else 30), RULE)
    assert [f.split(" grew")[0] for f in failures] == ["daemon fds",
                                                       "daemon threads"]


def test_a_step_of_one_or_two_descriptors_or_threads_is_not_growth():
    _, failures = soak.growth_report(
        run(lambda t: 30_000, fds=lambda t: 12 if t < 300 else 14,
            threads=lambda t: 12 if t < 300 else 14), RULE)
    assert failures == []
    _, failures = soak.growth_report(
        run(lambda t: 30_000, fds=lambda t: 12 if t < 300 else 15), RULE)
    assert [f.split(" grew")[0] for f in failures] == ["daemon fds"]


def test_a_restarted_process_before_it_settles_is_not_counted():
    # Every incarnation starts at 3x its steady RSS for its first 8 s.
    _, failures = soak.growth_report(
        run(lambda t: 90_000 if t % 60 < 8 else 30_000), RULE)
    assert failures == []


def test_the_first_incarnations_fill_is_the_runs_warmup():
    # The state fills during the first 150 s, then stays.
    _, failures = soak.growth_report(
        run(lambda t: 10_000 + 20_000 * min(t, 140) / 140), RULE)
    assert failures == []


def test_a_leak_inside_each_incarnation_fails_when_it_outgrows_the_limit():
    # Without restarts, 10 kB/s shows at the end as it does in one process.
    _, failures = soak.growth_report(
        run(lambda t: 28_500 + 10 * t, restart_every=10_000), RULE)
    assert len(failures) == 1


def test_each_series_is_judged_alone():
    samples = (run(lambda t: 30_000, series="follower") +
               run(lambda t: 28_500 + 10 * t, series="leader"))
    _, failures = soak.growth_report(samples, RULE)
    assert len(failures) == 1 and failures[0].startswith("leader rss_kb")


def test_too_few_samples_in_a_window_fails():
    samples = [s for s in run(lambda t: 30_000) if s.t < 400]
    _, failures = soak.growth_report(samples, RULE)
    assert failures == ["daemon: too few samples to judge (50 after warm-up, "
                        "0 at the end; at least 3 each)"]


def test_overlapping_windows_are_refused():
    rule = soak.Window(warmup=300, window=200, duration=600, settle=10,
                       limit=0.10)
    _, failures = soak.growth_report(run(lambda t: 30_000), rule)
    assert failures and "overlap" in failures[0]


def test_the_plot_has_one_line_per_process_and_the_restarts():
    samples = run(lambda t: 30_000)
    svg = soak.svg_plot(samples, [(60.0, "SIGTERM"), (120.0, "SIGKILL")],
                        RULE, "title")
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    # 10 incarnations in each of the three panels.
    assert svg.count("<polyline") == 30
    assert svg.count('stroke-dasharray="3,3"') == 2 * 3
