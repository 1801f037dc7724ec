/* fault injection (test_faults.c) */
PT_TEST(unit, start_onto_empty_heap_fails_with_enomem_and_changes_nothing)
PT_TEST(unit, reset_and_modify_of_idle_timer_fail_with_enomem_and_keep_its_fields)
PT_TEST(unit, heap_growth_fails_with_enomem_at_each_doubling_and_keeps_every_timer)
PT_TEST(unit, move_fails_with_enomem_and_leaves_every_timer_on_src)
PT_TEST(unit, check_survives_a_failed_shrink_after_compaction)
PT_TEST(unit, every_allocation_of_a_workload_failing_in_turn_leaves_it_consistent)
PT_TEST(unit, timerthread_create_fails_with_enomem_and_leaks_nothing)
PT_TEST(unit, timerthread_schedule_fails_with_invalid_id_and_keeps_issued_ids)
/* the bad-input table (test_badinput.c) */
PT_TEST(unit, every_public_function_rejects_each_bad_argument_class)
PT_TEST(unit, bad_input_table_has_a_row_for_every_public_function)
/* the fuzz targets on their seed corpus and every saved crash input */
PT_TEST(fuzz, fuzz_ptimer_corpus_and_regressions_pass)
PT_TEST(fuzz, fuzz_timerthread_corpus_and_regressions_pass)
PT_TEST(fuzz, fuzz_pwheel_corpus_and_regressions_pass)
PT_TEST(fuzz, fuzz_lheap_corpus_and_regressions_pass)
