PT_TEST(unit, heap4_orders_and_tracks_indices)
