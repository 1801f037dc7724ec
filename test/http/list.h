/* examples/httpd.c under a client of the test's own, over 127.0.0.1 */
PT_TEST(unit, keep_alive_answers_every_request_on_one_connection)
PT_TEST(unit, pipelined_requests_with_bodies_are_answered_in_order)
PT_TEST(unit, idle_connection_is_closed_once_its_timeout_passes)
PT_TEST(unit, malformed_requests_get_400_and_a_close)
PT_TEST(unit, oversized_head_gets_431_and_chunked_body_501)
PT_TEST(unit, clients_vanishing_mid_request_leave_the_server_serving)
PT_TEST(unit, stop_lets_a_request_under_way_finish_then_closes_the_idle)
PT_TEST(unit, stop_ends_a_request_past_its_grace)
