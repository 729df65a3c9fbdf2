"""Running generations: the prefetching runner and the generation cache."""
