"""InfiniteScienceGym."""
