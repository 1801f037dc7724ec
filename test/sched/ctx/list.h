/* the switch */
PT_TEST(unit, ping_pong_a_million_rounds_between_two_fibers_and_the_thread)
PT_TEST(unit, callee_saved_registers_survive_a_switch)
PT_TEST(unit, live_locals_survive_switches_in_a_loop)
PT_TEST(unit, rounding_mode_stays_with_the_context_that_set_it)
PT_TEST(unit, new_fiber_starts_with_default_rounding_whoever_makes_it)
PT_TEST(unit, fiber_stack_is_aligned_for_sse_calls_whatever_the_region)
PT_TEST(unit, backtrace_in_a_fiber_ends_at_its_entry)
/* threads */
PT_TEST(unit, thread_fiber_bounds_hold_the_running_stack)
PT_TEST(unit, fiber_migrates_between_threads_and_completes)
/* stacks */
PT_TEST(unit, stack_alloc_rounds_to_pages_and_honours_injected_failure)
PT_TEST(unit, overflow_faults_on_the_guard_page)
PT_TEST(unit, forty_thousand_stacks_stay_a_few_mappings)
PT_TEST(unit, overflow_into_a_canary_page_is_seen)
PT_TEST(unit, one_stack_reused_by_ten_thousand_fibers)
