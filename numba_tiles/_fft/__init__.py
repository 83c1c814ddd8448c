"""`FFT`'s machinery: cuFFTDx's database read in Python (`database`), its in-kernel calls' rules (`calls`) and their
NumPy twins (`twins`)."""
