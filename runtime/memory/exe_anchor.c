/* Linked into every Midway executable (mwcc adds lib/midway_exe.o), at the first byte
 * past the shared window.
 *
 * The kernel starts a position-dependent executable's brk heap just above its highest
 * segment. Without this byte that segment would be the static shared data at the
 * window base, and malloc (called by libc and libstdc++ before the runtime's
 * constructor) would take pages inside the window, where every rank must be free to
 * place shared data. With it, the brk heap starts above the window. */
__attribute__((section("mw_window_end"), used)) char __mw_window_end;
