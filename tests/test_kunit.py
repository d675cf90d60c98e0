"""The alloc_tag_index KUnit suite of the packed series passes when booted."""

from bench import parse
from tests.guest import boot

EXPECTED = {
    "kernel_tag_index_round_trip",
    "module_tag_index_round_trip",
    "module_range_reused_only_when_idle",
    "module_overflow_goes_to_named_entry",
    "released_entries_outlive_rcu_readers",
    "boot_mode_falls_back_when_tags_do_not_fit",
    "index_set_and_clear_keep_other_fields",
    "concurrent_index_updates_keep_flag_bits",
    "split_tags_every_subpage",
    "copy_moves_tag_and_accounting",
    "index_zero_accounts_to_unreported_counters",
    "module_tags_get_counters_of_their_own",
    "page_ext_clients_stay_aligned",
    # packed-refs patch 20: the inline page_ext16 hooks and page_ext_lookup()
    "page_ext16_slot_names_the_call_site",
    "cpupid_borrowed_only_where_numa_balancing_cannot_run",
    # packed-refs patch 23: spare bits narrower than 16 before last_cpupid
    "index_field_chain_prefers_spare_bits",
    "cpupid_field_has_one_owner",
    "cpupid_field_starts_clear",
    "page_flags_format_shows_the_index",
    # patches/packed-select: call sites switched off and on
    "control_queries_parse",
    "control_queries_match",
    "control_switches_sites",
    "site_off_is_neither_counted_nor_tagged",
}
# Only where the index can borrow last_cpupid (configs/distro.config).
CPUPID_ONLY = {"cpupid_field_has_one_owner", "cpupid_field_starts_clear"}
# Only in page_ext16 mode (alloc_tag.page_refs=page_ext16).
EXT16_ONLY = {"page_ext16_slot_names_the_call_site"}
# patches/packed-slab: slab object tag indices and the object index.
SLAB_EXPECTED = {
    "obj_index_is_exact",
    "object_keeps_its_tag_index",
    "slots_lie_in_the_vector_allocation",
    "bulk_objects_are_tagged",
    "krealloc_and_kvfree_rcu_uncount",
}


def kunit_boot(name, append="", variant="packed"):
    # Two vCPUs under multi-threaded TCG, so the concurrency case really races.
    b = boot(name, variant, append="kunit.enable=1 " + append, smp=2, timing="tcg")
    assert b.ok, b.why()
    return b


def cases_of(b, suite="alloc_tag_index"):
    return {c.name: c for c in parse.ktap(b.dmesg) if c.suite == suite}


def slab_suite_passes(b):
    """Every case of the alloc_tag_slab suite ran and passed."""
    cases = cases_of(b, "alloc_tag_slab")
    assert set(cases) == SLAB_EXPECTED, sorted(cases)
    bad = {n: c.result for n, c in cases.items() if c.result != "ok"}
    assert not bad, f"alloc_tag_slab cases not ok: {bad}"


def kunit_cases(name, append="", variant="packed"):
    return cases_of(kunit_boot(name, append, variant))


def test_kunit_alloc_tag_index_suite_passes_in_flags_mode():
    b = kunit_boot("kunit-flags")
    slab_suite_passes(b)
    cases = cases_of(b)
    assert set(cases) == EXPECTED
    failed = [n for n, c in cases.items() if c.result == "not ok"]
    skipped = [n for n, c in cases.items() if c.result == "skip"]
    assert not failed, f"failed KUnit cases: {failed}"
    assert set(skipped) == CPUPID_ONLY | EXT16_ONLY, f"skipped KUnit cases: {skipped}"


def test_kunit_alloc_tag_index_suite_passes_in_borrowed_last_cpupid_bits():
    # packed-debug has Debian's config with 12 spare page->flags bits next
    # to last_cpupid: one node and at least 16 index bits wanted, so the
    # index takes the last_cpupid bits and every case runs.  (Its default,
    # the spare bits, runs KUnit in tests/test_distro.py's 2nodes-spare.)
    b = kunit_boot("kunit-cpupid", "alloc_tag.min_index_bits=16", variant="packed-debug")
    r = b.page_refs()
    assert (r.extra.get("index_field"), r.index_bits) == ("last_cpupid", 16), r
    cases = cases_of(b)
    # ... and the slab cases with memcg's objcg vector next to the indices.
    slab_suite_passes(b)
    # packed-debug has UBSAN's shift checks: the page_ext layout of a client
    # without data (size 0) and every page->flags shift must stay defined.
    ubsan = [ln for ln in b.dmesg.splitlines() if "UBSAN:" in ln]
    assert not ubsan, ubsan
    assert set(cases) == EXPECTED
    failed = [n for n, c in cases.items() if c.result == "not ok"]
    skipped = [n for n, c in cases.items() if c.result == "skip"]
    assert not failed, f"failed KUnit cases: {failed}"
    assert set(skipped) == EXT16_ONLY, f"skipped KUnit cases: {skipped}"


def test_kunit_alloc_tag_index_suite_passes_in_page_ext16_mode():
    cases = kunit_cases("kunit-ext16", "alloc_tag.page_refs=page_ext16")
    assert set(cases) == EXPECTED
    assert not [n for n, c in cases.items() if c.result == "not ok"]
    # The page->flags cases do not apply in this mode, the others must run.
    ran = {n for n, c in cases.items() if c.result == "ok"}
    assert {"kernel_tag_index_round_trip", "module_overflow_goes_to_named_entry",
            "released_entries_outlive_rcu_readers", "split_tags_every_subpage", "copy_moves_tag_and_accounting",
            "module_tags_get_counters_of_their_own", "page_ext_clients_stay_aligned"} | EXT16_ONLY <= ran
