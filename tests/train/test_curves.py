"""Learning curves read back from TensorBoard events: values, order, tags, table, plot, CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from torch.utils.tensorboard import SummaryWriter

from orderchaos.cli.main import main
from orderchaos.train.curves import Curve, curves_figure, curves_table, plot_curves, read_scalars, select_curves


def _run(directory: Path, scalars: dict[str, list[tuple[int, float]]], purge_step: int | None = None) -> Path:
    """Write ``scalars`` to a new event file in ``directory``. The file is renamed to sort
    after the folder's earlier ones: TensorBoard reads files in name order, and the names it
    gives (time in seconds, then a per-process counter compared as text, so ``.10`` before
    ``.9``) do not order two writers of one test."""
    directory.mkdir(parents=True, exist_ok=True)
    before = set(directory.glob("events.out.tfevents.*"))
    writer = SummaryWriter(str(directory), purge_step=purge_step)
    for tag, points in scalars.items():
        for step, value in points:
            writer.add_scalar(tag, value, step)
    writer.close()
    (written,) = set(directory.glob("events.out.tfevents.*")) - before
    written.rename(directory / f"events.out.tfevents.{len(before) + 1:010d}.test")
    return directory


@pytest.fixture
def two_runs(tmp_path: Path) -> list[Path]:
    a = _run(tmp_path / "seed1", {
        "eval/accuracy_23_26_chaos": [(20, 0.5), (40, 0.75)],
        "eval/accuracy_27_30_chaos": [(20, 0.25), (40, 0.625)],
        "eval/accuracy_23_26_order": [(20, 0.875)],
        "order/losses/policy": [(1, 2.0)],
    })
    b = _run(tmp_path / "seed2", {"eval/accuracy_23_26_chaos": [(40, 0.5), (20, 0.375)]})
    return [a, b]


def test_read_scalars_gives_points_in_step_order(two_runs):
    assert read_scalars(two_runs[1]) == {"eval/accuracy_23_26_chaos": ((20, 0.375), (40, 0.5))}


def test_a_resumed_run_keeps_its_own_values_not_the_killed_attempts(tmp_path, caplog):
    run = _run(tmp_path / "r", {"eval/accuracy_all": [(20, 0.5), (40, 0.25), (60, 0.125)]})
    _run(run, {"eval/accuracy_all": [(40, 0.625), (50, 0.75)]}, purge_step=21)  # resumed at 20
    assert read_scalars(run)["eval/accuracy_all"] == ((20, 0.5), (40, 0.625), (50, 0.75))
    assert not [r for r in caplog.records if r.name.startswith("tensorboard")]


def test_patterns_pick_tags_run_by_run(two_runs):
    curves = select_curves(two_runs, ["eval/accuracy_*_chaos"])
    assert [(c.run, c.tag, c.points) for c in curves] == [
        ("seed1", "eval/accuracy_23_26_chaos", ((20, 0.5), (40, 0.75))),
        ("seed1", "eval/accuracy_27_30_chaos", ((20, 0.25), (40, 0.625))),
        ("seed2", "eval/accuracy_23_26_chaos", ((20, 0.375), (40, 0.5))),
    ]
    exact = select_curves(two_runs, ["order/losses/policy"], labels=["a", "b"])
    assert [(c.run, c.tag) for c in exact] == [("a", "order/losses/policy")]


def test_table_has_a_row_per_run_and_step_and_blanks_for_missing(two_runs):
    table = curves_table(select_curves(two_runs, ["eval/accuracy_*_chaos"]))
    assert table.splitlines() == [
        "| run | step | eval/accuracy_23_26_chaos | eval/accuracy_27_30_chaos |",
        "|---|---:|---:|---:|",
        "| seed1 | 20 | 0.500 | 0.250 |",
        "| seed1 | 40 | 0.750 | 0.625 |",
        "| seed2 | 20 | 0.375 |  |",
        "| seed2 | 40 | 0.500 |  |",
    ]


def test_bad_runs_patterns_and_labels_are_refused(two_runs, tmp_path):
    with pytest.raises(ValueError, match="matches nothing.*eval/accuracy_23_26_chaos"):
        select_curves(two_runs, ["eval/nothing_*"])
    with pytest.raises(ValueError, match="no TensorBoard events"):
        select_curves([tmp_path], ["*"])
    with pytest.raises(ValueError, match="not a directory"):
        select_curves([tmp_path / "missing"], ["*"])
    with pytest.raises(ValueError, match="1 labels for 2 runs"):
        select_curves(two_runs, ["*"], labels=["only"])


def test_plot_writes_a_png(two_runs, tmp_path):
    out = plot_curves(select_curves(two_runs, ["eval/accuracy_*"]), tmp_path / "c.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_log_draws_a_panel_spanning_orders_of_magnitude_on_a_symmetric_log_scale():
    import matplotlib.pyplot as plt

    wide = Curve("run", "exploit/refutations", ((40, 107979.0), (80, 547.0), (120, 0.0)))
    narrow = Curve("run", "exploit/positions", ((40, 1299865.0), (80, 4012865.0), (120, 3118839.0)))
    for log, scales in ((True, ["linear", "symlog"]), (False, ["linear", "linear"])):
        fig = curves_figure([wide, narrow], log=log)
        assert [ax.get_yscale() for ax in fig.axes if ax.get_visible()] == scales  # panels sorted by tag
        plt.close(fig)


def test_a_run_keeps_its_colour_and_its_label_on_a_panel_the_other_run_lacks():
    import matplotlib.pyplot as plt

    curves = [Curve("seed 1", "exploit/positions", ((40, 3.0),)), Curve("seed 2", "exploit/positions", ((40, 4.0),)),
              Curve("seed 2", "exploit/perfect", ((40, 0.0),))]
    fig = curves_figure(curves)
    perfect, positions = (ax for ax in fig.axes if ax.get_visible())  # panels sorted by tag
    colour = {line.get_label(): line.get_color() for line in positions.get_lines()}
    assert colour["seed 1"] != colour["seed 2"]
    assert [(line.get_label(), line.get_color()) for line in perfect.get_lines()] == [("seed 2", colour["seed 2"])]
    assert [text.get_text() for text in perfect.get_legend().get_texts()] == ["seed 2"]
    plt.close(fig)


def test_cli_prints_the_table_then_draws(two_runs, tmp_path, capsys):
    out = tmp_path / "plots" / "chaos.png"
    assert main(["curves", *map(str, two_runs), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| seed2 | 40 | 0.500 |  |" in printed
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cli_checks_the_output_before_reading_and_refuses_bad_input(two_runs, tmp_path, capsys):
    assert main(["curves", str(tmp_path / "missing"), "--out", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert main(["curves", str(two_runs[0]), "--tag", "bogus"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "orderchaos curves: tag 'bogus' matches nothing" in err


@pytest.mark.parametrize("name", ["chaos.txt", "chaos"])
def test_cli_refuses_an_output_matplotlib_cannot_draw_before_any_work(name, two_runs, tmp_path, capsys):
    out = tmp_path / name
    assert main(["curves", *map(str, two_runs), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert f"orderchaos curves: cannot draw {out}: a plot file ends in .png" in captured.err
    assert ".svg" in captured.err and not out.exists()
