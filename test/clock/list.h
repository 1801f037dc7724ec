/* The clock's tests, one line each: PT_TEST(label, name) runs
 * test_<name>(); CMake reads this file and registers each with ctest (the
 * first three again with PT_CLOCK set to each source: test/CMakeLists.txt). */
PT_TEST(unit, reads_agree_with_clock_monotonic_within_bound)
PT_TEST(unit, reads_never_go_backwards_across_threads)
PT_TEST(unit, source_is_the_one_pt_clock_asks_for)
PT_TEST(unit, each_source_agrees_and_never_goes_backwards)
PT_TEST(unit, relaxed_reads_trail_the_ordered_ones_by_less_than_the_bound)
PT_TEST(unit, counter_behind_the_anchor_reads_the_anchor)
PT_TEST(unit, stale_line_is_reanchored_continuously)
PT_TEST(unit, signals_wait_out_the_reanchor_write)
PT_TEST(unit, a_real_time_reader_lets_a_preempted_reanchor_finish)
PT_TEST(unit, line_ahead_is_slowed_back_onto_clock_monotonic)
PT_TEST(unit, line_behind_jumps_forward_onto_clock_monotonic)
