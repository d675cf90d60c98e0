"""The cover letter's "Measured" section is generated from the run it names
(analysis/cover.py), so a number in it can be neither typed by hand nor left
behind when the reference run changes."""

import shutil

import pytest

from analysis import cover
from analysis.tests import synth

pytestmark = pytest.mark.unit


def test_cover_letter_matches_the_run_it_names(capsys):
    assert cover.main(["--check"]) == 0, capsys.readouterr().err
    sec = cover.split_cover(cover.COVER.read_text())[1]
    assert "n/a" not in sec and "?" not in sec
    assert (cover.REPO / "results" / cover.named_run(sec) / "manifest.json").exists()


def test_an_edited_number_is_caught(tmp_path, capsys):
    copy = tmp_path / "0000-cover-letter.patch"
    shutil.copy(cover.COVER, copy)
    before, sec, after = cover.split_cover(copy.read_text())
    line = next(ln for ln in sec.splitlines() if ln.startswith("  this series, page->flags index"))
    edited = line.replace("+", "+1", 1)
    copy.write_text(before + sec.replace(line, edited) + "\n\n" + after)
    assert cover.main(["--check", "--cover", str(copy)]) == 1
    assert "differs from what run" in capsys.readouterr().err


def test_write_then_check_round_trips(tmp_path, capsys):
    copy = tmp_path / "0000-cover-letter.patch"
    shutil.copy(cover.COVER, copy)
    run = cover.named_run(cover.split_cover(copy.read_text())[1])
    text = copy.read_text()
    assert cover.main([str(cover.REPO / "results" / run), "--write", "--cover", str(copy)]) == 0
    assert copy.read_text() == text
    assert cover.main(["--check", "--cover", str(copy)]) == 0


def test_a_missing_kernel_is_an_error_not_an_empty_cell(tmp_path, capsys):
    # synth runs have no packed-nopf: the table row must not come out empty
    run = synth.make_run(tmp_path, synth.Spec(workloads=("micro", "mem"), reps=1))
    assert cover.main([str(run)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: run has no packed-nopf") and err.count("\n") == 1


def test_cover_without_section_is_an_error(tmp_path):
    with pytest.raises(cover.CoverError):
        cover.split_cover("Subject: x\n\nno section here\n")


def test_measured_section_states_the_unmet_targets():
    from analysis import load, report, summarize
    sec = cover.split_cover(cover.COVER.read_text())[1]
    run = load.load_run(cover.REPO / "results" / cover.named_run(sec))
    unmet = report.unmet_targets(summarize.summarize(run), run)
    assert unmet, "the reference run meets every target: nothing to check"
    flat = " ".join(sec.split())
    for t in unmet:
        assert t in flat, t
