#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-only
"""Differential protocol test: the same sessions, including malformed input,
go to Debian's memcached and to cached; replies must match byte for byte,
cas uniques included (version and stats are checked separately)."""
import re
import sys

import util

K250 = b"k" * 250
K251 = b"k" * 251
M1 = 1 << 20

CASES = {
    "set_get": b"set a 0 0 1\r\nx\r\nget a\r\nget a b a\r\n",
    "get_many_keys": b"set m 0 0 1\r\nx\r\nget " + b" ".join(b"m" for _ in range(60)) + b" zz\r\n",
    "get_40_misses": b"get " + b" ".join(b"k%d" % i for i in range(40)) + b"\r\n",
    "key_250": b"set " + K250 + b" 5 0 2\r\nab\r\nget " + K250 + b"\r\n",
    "key_251_set": b"set " + K251 + b" 0 0 1\r\nx\r\n",
    "key_251_get": b"set a 0 0 1\r\nx\r\nget a " + K251 + b" a\r\n",
    "key_251_others": b"incr " + K251 + b" 1\r\ndelete " + K251 + b"\r\ntouch " + K251 + b" 1\r\n",
    "negative_len": b"set a 0 0 -1\r\nx\r\nget a\r\n",
    "bad_chunk": b"set a 0 0 3\r\nxxxxx\r\nget a\r\n",
    "bad_chunk_noreply": b"set a 0 0 3 noreply\r\nxxxxx\r\nget a\r\n",
    "bad_chunk_lf": b"set e 0 0 1\r\nx\nget e\r\n",
    "too_large": b"set a 0 0 2000000\r\n" + b"x" * 2000000 + b"\r\nget a\r\n",
    "too_large_noreply": b"set a 0 0 2000000 noreply\r\n" + b"x" * 2000000 + b"\r\nget a\r\nversion\r\n".replace(b"version\r\n", b""),
    "too_large_drops_old": b"set big 0 0 1\r\nx\r\nset big 0 0 1048577\r\n" + b"x" * 1048577 + b"\r\nget big\r\n",
    "near_limit": b"set big 0 0 1000000\r\n" + b"y" * 1000000 + b"\r\nget big\r\n",
    "incr_decr": b"set n 0 0 3\r\n100\r\ndecr n 95\r\nget n\r\nincr n -1\r\nincr n abc\r\nincr zz 1\r\nset t 0 0 2\r\nab\r\nincr t 1\r\n",
    "incr_wrap": b"set i 0 0 20\r\n18446744073709551615\r\nincr i 1\r\nget i\r\nset j 0 0 1\r\n9\r\nincr j 1\r\nget j\r\nincr j 18446744073709551616\r\n",
    "incr_long_values": b"set a 0 0 40\r\n5" + b" " * 39 + b"\r\nincr a 1\r\nget a\r\n"
                        b"set b 0 0 35\r\n" + b"0" * 34 + b"7\r\ndecr b 2\r\nget b\r\n"
                        b"set c 0 0 33\r\n" + b"1" * 33 + b"\r\nincr c 1\r\n"
                        b"set d 0 0 36\r\n" + b" " * 35 + b"9\r\nincr d 1\r\nget d\r\n"
                        b"set e 0 0 32\r\n12345678901234567890" + b"x" * 12 + b"\r\nincr e 1\r\n"
                        b"set f 0 0 31\r\n9" + b" " * 30 + b"\r\nincr f 1\r\nget f\r\n",
    "decr_floor": b"set d 0 0 1\r\n5\r\ndecr d 10\r\nincr d 1 noreply\r\nget d\r\nincr d 1 2\r\ndecr d\r\n",
    "slabs_automove": b"slabs\r\nslabs automove\r\nslabs automove invalid\r\nslabs automove 0\r\n"
                      b"slabs automove 1\r\nslabs automove 2\r\nslabs automove 3\r\n"
                      b"slabs automove 1 noreply\r\nslabs automove ratio\r\nslabs automove ratio 0.5\r\n"
                      b"slabs automove ratio x\r\nslabs automove ratio 0.5 noreply\r\nslabs foo bar\r\n"
                      b"slabs automove 1 2\r\nslabs automove -1\r\nslabs reassign\r\nmn\r\n",
    "verbosity": b"verbosity\r\nverbosity x\r\nverbosity 1\r\nverbosity 1 noreply\r\nverbosity 5 junk\r\nverbosity noreply\r\nverbosity 0\r\n",
    "delete_forms": b"set a 0 0 1\r\nx\r\ndelete a 0\r\ndelete a 1\r\ndelete a noreply\r\ndelete a 0 noreply\r\ndelete a x y\r\ndelete a\r\n",
    "flush_forms": b"flush_all x\r\nflush_all 0\r\nflush_all noreply\r\nflush_all 1 2 3\r\nflush_all noreply 5\r\nflush_all -1\r\n",
    "flush_clears": b"set a 0 0 1\r\nx\r\nflush_all\r\nget a\r\nset a 0 0 1\r\ny\r\nget a\r\n",
    "gat_forms": b"gat\r\ngat 10\r\ngat x a\r\ntouch a\r\ntouch a x\r\ngats\r\ngats 1\r\ngets\r\n",
    "touch_gat": b"set c 0 0 1\r\nx\r\ntouch c 100\r\ntouch nope 1\r\ngat 0 c zz\r\ngat 100 c\r\n",
    "junk_lines": b"\r\n\n \r\nx\r\nGET a\r\nstats foo\r\nshutdown\r\nmn\r\nxyzzy 1 2\r\n",
    "token_counts": b"set a 0 0 1 2 3\r\nset a 0\r\ncas a 0 0 1\r\ncas a 0 0 1 x\r\nx\r\nincr\r\nget\r\ndelete\r\ntouch\r\n",
    "flags": b"set f -1 0 1\r\nx\r\nset f 4294967296 0 1\r\nx\r\nget f\r\nset g 4294967295 0 1\r\ny\r\nget g\r\n",
    "number_forms": b"set e 0 0 01\r\nx\r\nget e\r\nset e 0 0 1x\r\nx\r\nset e 0 0 1\tx\r\ny\r\nget e\r\n",
    "spaces": b"  get a\r\nget  a   \r\nget a\nset a 0 0 1\r\nz\r\n   get    a  \r\n",
    "nul_bytes": b"set x 0 0 1\r\n\x00\r\nget x\r\nset x\x00y 0 0 1\r\nz\r\n",
    "noreply_all": b"set q 0 0 1 noreply\r\nx\r\nadd q 0 0 1 noreply\r\ny\r\nreplace q 0 0 1 noreply\r\nz\r\nappend q 0 0 1 noreply\r\na\r\nprepend q 0 0 1 noreply\r\nb\r\ntouch q 10 noreply\r\nincr q 1 noreply\r\ndelete q noreply\r\nget q\r\n",
    "add_replace": b"set a 0 0 1 noreply\r\nx\r\nadd a 0 0 1\r\ny\r\nreplace zz 0 0 1\r\ny\r\nreplace a 0 0 1 noreply\r\nz\r\nget a\r\nadd new 3 0 1\r\nn\r\nget new\r\n",
    "append_prepend": b"set a 7 0 1\r\nx\r\nappend a 0 0 1\r\ny\r\nprepend a 9 0 1\r\nz\r\nget a\r\nappend nope 0 0 1\r\nx\r\nprepend nope 0 0 1\r\nx\r\n",
    "append_incr": b"set u 1 0 1\r\n1\r\nappend u 5 5 1\r\n2\r\nincr u 5\r\nget u\r\n",
    "cas_flow": b"cas nokey 0 0 1 5\r\nx\r\nset c 0 0 1\r\nx\r\ncas c 0 0 1 999999\r\ny\r\nget c\r\n",
    "expiry": b"set a 0 -1 1\r\nx\r\nget a\r\nset b 0 1000 1\r\nx\r\nget b\r\nset c 0 1 1\r\nx\r\ntouch b -1\r\nget b\r\nset d 0 100000000 1\r\nx\r\nget d\r\nset e 0 4000000000 1\r\ny\r\nget e\r\n",
    "gat_expire": b"set a 0 0 1\r\nx\r\ngat -1 a\r\nget a\r\n",
    "line_2048_close": b"x" * 3000,
    "long_get_line": b"get " + b"a " * 1500 + b"\r\n",
    "long_set_line": b"set " + b"a" * 3000 + b" 0 0 1\r\nx\r\n",
    "partial_value": b"set a 0 0 10\r\nx",
    "version_quit": b"quit\r\nget a\r\n",
    "stats_sub": b"stats reset\r\nstats detail\r\nstats nosuch\r\n",
    "stats_detail": b"stats detail dump\r\nstats detail on\r\nset a:1 0 0 1\r\nx\r\n"
                    b"get a:1 a:2 b:1 nodelim\r\nset nodelim 0 0 1\r\nx\r\ndelete a:1\r\n"
                    b"delete c:9\r\nadd a:3 0 0 1\r\nx\r\nadd a:3 0 0 1\r\nx\r\nincr a:3 1\r\n"
                    b"touch a:3 10\r\ngat 0 a:3\r\ngets a:3\r\ncas a:3 0 0 1 999\r\ny\r\n"
                    b"append q:1 0 0 1\r\nz\r\nset x:1 0 0 -1\r\nset :lead 0 0 1\r\nx\r\n"
                    b"set a::b 0 0 1\r\nx\r\nset trail: 0 0 1\r\nx\r\nget :lead\r\n"
                    b"delete " + K251 + b":\r\nget k:" + K250 + b"\r\n"
                    b"set user:1 0 0 1\r\nx\r\nset session:9 0 0 1\r\nx\r\nget img:3 css:4 js:5\r\n"
                    b"stats detail dump\r\nstats detail off\r\nget a:3\r\nstats detail dump\r\n"
                    b"stats detail on extra\r\nstats detail ON\r\nstats detail off\r\n"
                    b"stats reset\r\nstats detail dump\r\n",
    "stats_cachedump_args": b"stats cachedump\r\nstats cachedump 1\r\nstats cachedump x 0\r\n"
                            b"stats cachedump 1 x\r\nstats cachedump -1 0\r\nstats cachedump 64 0\r\n"
                            b"stats cachedump 18446744073709551615 0\r\nstats cachedump 63 0\r\n"
                            b"stats sizes\r\n",
    "http": b"GET / HTTP/1.1\r\nget a\r\n",
    "binary_junk": bytes(range(256)) + b"\r\nget a\r\n",
    "crlf_only_value": b"set a 0 0 0\r\n\r\nget a\r\nappend a 0 0 0\r\n\r\nincr a 1\r\n",
    "meta_noop": b"mn\r\n",
    # which queued replies a bad key takes back: memcached sends its queue
    # after a get that succeeds, after mn and every 20 commands past 21
    "cull_since_last_get": b"set a 0 0 1\r\nx\r\nget a\r\ndelete zz\r\ngets a\r\ntouch zz 0\r\nincr zz 1\r\nget a " + K251 + b"\r\n",
    "cull_all_queued": b"set a 0 0 1\r\nx\r\ndelete zz\r\nstats reset\r\ngat 0 a " + K251 + b" a\r\nget a\r\n",
    "cull_after_mn": b"delete zz\r\nmn\r\ndelete zz\r\nget " + K251 + b"\r\n",
    "cull_after_21": b"delete zz\r\n" * 45 + b"get " + K251 + b"\r\n",
    "cull_after_miss_get": b"touch zz 1\r\nget zz\r\ntouch zz 1\r\ngets " + K251 + b"\r\n",
    # a line longer than memcached's 16 KiB buffer never ends: closed
    "line_over_16k": b"delete zz\r\n" + b"x" * 20000 + b"\r\nget a\r\n",
    "set_line_over_16k": b"set " + b"a" * 17000 + b" 0 0 1\r\nx\r\n",
    "get_line_over_16k": b"set a 0 0 1\r\nx\r\nget " + b"a " * 9000 + b"\r\n",
    "straddling_line": b"delete zz\r\n" * 1400 + b"x" * 3000 + b"\r\nget a\r\n",
    # replies wait while a value block is unfinished, and go on close
    "held_by_partial_value": b"delete zz\r\nset b 0 0 10\r\nxx",
    "held_by_swallow": b"delete zz\r\nset a 0 0 2000000\r\n" + b"x" * 1000,
    "dropped_on_long_line": b"delete zz\r\n" + b"x" * 3000,
    "dropped_on_http": b"delete zz\r\nGET / HTTP/1.1\r\n",
    "sent_on_quit": b"delete zz\r\nquit\r\n",
    # every command that finds an expired or flushed item counts it
    "expired_lookups": b"set a 0 -1 1\r\n1\r\nincr a 1\r\nset b 0 -1 1\r\n1\r\ndelete b\r\nset c 0 -1 1\r\n1\r\ntouch c 0\r\nset d 0 -1 1\r\n1\r\nappend d 0 0 1\r\n2\r\nset e 0 -1 1\r\n1\r\nset e 0 0 1\r\n2\r\nget e\r\n",
    "flushed_lookups": b"set a 0 0 1\r\n1\r\nflush_all 1\r\nincr a 1\r\nget a\r\nset b 0 0 1\r\n2\r\nget b\r\nflush_all 0\r\n",
    # a flush that acts at once takes a cas unique in memcached
    "cas_after_flush": b"flush_all\r\nset a 0 0 1\r\nx\r\ngets a\r\nflush_all 0\r\nset b 0 0 1\r\ny\r\ngets b\r\nflush_all 100\r\nset c 0 0 1\r\nz\r\ngets c\r\nflush_all\r\n",
    # meta commands: every flag, modes, quiet mode, opaque, base64 keys
    "meta_get_flags": b"ms foo 3\r\nbar\r\nmg foo v\r\nmg foo s v t f c k Oabc\r\nmg nope v\r\n"
                      b"mg nope v q\r\nmg nope k Oxy q\r\nmg foo q v\r\nmg foo q\r\nmn\r\n",
    "meta_set_flags": b"ms foo 3 T100 F5 c k O123\r\nbar\r\nmg foo t f v h l\r\nmg foo h\r\n"
                      b"mg foo u h\r\nmd foo\r\nmd foo q\r\nmd foo\r\nmn\r\n",
    "meta_set_modes": b"ms k 2 MA\r\nxx\r\nms k 1\r\na\r\nms k 2 MA\r\nbc\r\nms k 1 MP\r\nz\r\n"
                      b"mg k v\r\nms k 1 ME\r\nq\r\nms n 1 MR\r\nq\r\nms k 1 MX\r\nq\r\n"
                      b"ms k 1 MS c\r\nw\r\nms k 1 Ms\r\nw\r\nmg k v\r\n",
    "meta_set_cas": b"ms k 1 C99\r\nx\r\nms k 1\r\nx\r\nmg k c\r\nms k 1 C1\r\ny\r\n"
                    b"ms k 1 C3 c\r\ny\r\nmg k v c\r\nms k 1 MA C2\r\nz\r\nms k 1 MA C5 c\r\nz\r\n"
                    b"ms k 1 ME C5\r\nz\r\nms k 1 MR C1\r\nz\r\nmg k v c\r\n",
    "meta_vivify": b"mg k N30 v c t\r\nmg k v c t\r\nmg k v\r\nms k 3 T30\r\nnew\r\nmg k v t\r\n"
                   b"mg j N30 s\r\nmg j N30 s\r\n",
    "meta_arith": b"ma n\r\nma n N0 J10\r\nma n\r\nma n v\r\nma n MD D3 v c t\r\nma n q\r\n"
                  b"ma n MX\r\nma n D1x\r\nma n C1\r\nmg n v\r\nma n M- D100 v\r\nma n M+ v T30 t\r\n"
                  b"ms s 2\r\nab\r\nma s\r\nms e 0\r\n\r\nma e\r\nma e C1\r\nma m N0 J18446744073709551615 v\r\nma m v\r\n",
    "meta_errors": b"mg\r\nms\r\nms k\r\nms k x\r\nmd\r\nma\r\nme\r\nmz k\r\nmg k v v\r\nmg k zz\r\n"
                   b"mg k T\r\nmg k Tx\r\nmg k Nx\r\nmg k Rx\r\nms k 1 Fx\r\nx\r\nms k 1 Cx\r\nx\r\n"
                   b"ms k 1 MSS\r\nx\r\nmd k zz\r\nma k zz\r\nma k Jx\r\nma k Dx\r\nms k -1\r\n"
                   b"ms " + K251 + b" 1\r\nx\r\nmg " + K251 + b" v\r\nmd " + K251 + b"\r\n"
                   b"ma " + K251 + b"\r\nme " + K251 + b"\r\nmg k \xff\r\n",
    "meta_base64": b"ms Zm9v 2 b\r\nhi\r\nmg foo v k\r\nmg Zm9v b v k\r\nmg Zm9v= b v\r\nmg !!! b v\r\n"
                   b"me foo\r\nme Zm9v b\r\nme !! b\r\nms YWJj 2 b k c O1\r\nxy\r\nmd YWJj b k q\r\n"
                   b"md YWJj b k\r\nma bnVt b N0 J5 k v\r\nmg num k v\r\n",
    "meta_invalidate": b"ms k 3 T100\r\nabc\r\nmd k I T30\r\nmg k v c t\r\nmg k v c t\r\n"
                       b"ms k 3 C1 I\r\nnew\r\nmg k v t\r\nms k 3 C999 I\r\nxyz\r\nmg k v\r\nmd k I q\r\nmd k C1\r\nmn\r\n",
    "meta_recache": b"ms k 3 T100\r\nabc\r\nmg k R200 v\r\nmg k R200 v\r\nmg k R50 v\r\nms r 1\r\nx\r\nmg r R30 v\r\n",
    "meta_too_long": b"mg k O123456789012345678901234567890123\r\nms k 1 O123456789012345678901234567890123\r\nx\r\n"
                     b"ma k O123456789012345678901234567890123\r\nmd k O123456789012345678901234567890123\r\n"
                     b"mg k a b c d e f g h i j k l m n o p q r s t u v\r\nms k 1 a b c d e f g h i j k l m n o p q r s t\r\nx\r\n"
                     b"md k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\r\nma k 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19\r\n",
    "meta_quiet": b"ms k 2\r\nabcd\r\nmg k v\r\nms k 2 q\r\nab\r\nms k 2 q\r\nabcd\r\nmg k v q\r\n"
                  b"ms k 1 q ME\r\nx\r\nma k q\r\nms n 1 q\r\n1\r\nma n q\r\nma n q v\r\nmd zz q\r\nmn\r\n",
    "meta_too_large": b"ms big 1\r\nx\r\nms big 2000000 T0\r\n" + b"x" * 2000000 + b"\r\nmg big v\r\n"
                      b"ms big 1 q\r\ny\r\nms big 1048577 MA q\r\n" + b"x" * 1048577 + b"\r\nmg big v\r\n",
    "meta_value_never_a_command": b"ms k 10\r\nget a b c\r\nmg k v\r\nms k 5 MZ\r\nstats\r\nms k 5 Fx\r\nquit\r\nmn\r\n",
    "meta_pipeline_mixed": b"set a 0 0 1\r\nx\r\nmg a v\r\nget a\r\nms a 2 MA\r\nyz\r\ngets a\r\n"
                           b"incr a 1\r\nma a\r\ndelete a\r\nmd a\r\nmg a v\r\nmn\r\nget " + K251 + b"\r\n",
    "meta_cull": b"md zz\r\nmg a v\r\nms a 1\r\nx\r\nmg a v\r\nget a " + K251 + b"\r\nmn\r\n",
    # memcached's -I bound: 48 bytes of header, key and NUL, 4 bytes of
    # client flags unless 0, the value and CRLF, 8 bytes of cas; past it an
    # append or prepend is NOT_STORED and the value stays
    "item_size_boundary": b"".join(
        b"set k %d 0 %d\r\n%s\r\n" % (f, v, b"a" * v) for f in (0, 5)
        for v in (M1 - 65, M1 - 64, M1 - 63, M1 - 60, M1 - 59, M1 - 58)) + b"".join(
        b"set k %d 0 %d\r\n%s\r\n%s k 0 0 %d\r\n%s\r\nget k\r\n" % (f, a, b"a" * a, cmd, n, b"b" * n)
        for f in (0, 5) for cmd in (b"append", b"prepend")
        for a, n in ((M1 - 70, 9), (M1 - 70, 10), (M1 - 70, 11), (M1 - 74, 10), (M1 - 74, 11))) +
        b"set k 0 0 1000000\r\n" + b"c" * 1000000 + b"\r\nappend k 0 0 100000 noreply\r\n" +
        b"d" * 100000 + b"\r\nprepend k 0 0 1\r\ne\r\nms k 100000 MA\r\n" + b"f" * 100000 +
        b"\r\nms k 100000 MP q\r\n" + b"f" * 100000 + b"\r\nmn\r\n",
    "key_251_set_value_as_line": b"set " + K251 + b" 0 0 30000\r\n" + b"v" * 30000 + b"\r\nget a\r\n",
}

RESET_RE = re.compile(rb"<RESET>$")


def norm(b):
    """A reset is an end: whether a server that closes resets depends only
    on how much unread input it left behind.  cas uniques are compared:
    cached hands them out in memcached's order."""
    return RESET_RE.sub(b"", b)


def cas_session(port):
    """gets, then cas with the right and a wrong unique."""
    import socket
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(2)
    f = s.makefile("rb")
    out = []
    s.sendall(b"set cs 0 0 1\r\nx\r\ngets cs\r\n")
    out.append(f.readline())
    hdr = f.readline()
    out.append(norm(hdr))
    out.append(f.readline())
    out.append(f.readline())
    cas = hdr.split()[4]
    s.sendall(b"cas cs 0 0 1 " + cas + b"\r\ny\r\ncas cs 0 0 1 " + cas + b"\r\nz\r\ngets cs\r\n")
    for _ in range(5):
        out.append(norm(f.readline()))
    s.close()
    return b"".join(out)


def main():
    mc, mport = util.start_memcached()
    cd, cport = util.start_cached("--mode", "pinned")
    fails = 0
    try:
        for name, data in CASES.items():
            a = norm(util.command(mport, data))
            b = norm(util.command(cport, data))
            if a != b:
                fails += 1
                print("  diff %s:\n    memcached: %r\n    cached:    %r" % (name, a[:300], b[:300]))
        a, b = cas_session(mport), cas_session(cport)
        if a != b:
            fails += 1
            print("  diff cas_session:\n    memcached: %r\n    cached:    %r" % (a, b))
        v = util.command(cport, b"version\r\n")
        if not re.match(rb"^VERSION \d+\.\d+\.\d+\S*\r\n$", v):
            fails += 1
            print("  bad version reply %r" % v)
        sm, sc = util.stats(mport), util.stats(cport)
        need = ("pid uptime time version curr_items total_items bytes curr_connections "
                "total_connections cmd_get cmd_set cmd_flush cmd_touch get_hits get_misses "
                "get_expired delete_hits delete_misses incr_hits incr_misses decr_hits "
                "decr_misses cas_hits cas_misses cas_badval touch_hits touch_misses evictions "
                "bytes_read bytes_written limit_maxbytes threads mode volatile_bytes "
                "volatile_ranges purged_ranges purged_objects rebuilds rebuild_usec "
                "purge_misses origin_fetches origin_errors").split()
        missing = [n for n in need if n not in sc]
        if missing:
            fails += 1
            print("  stats missing: %s" % missing)
        # every session above went to both: the counters must agree too
        for n in ("cmd_get", "get_hits", "get_misses", "get_expired", "cmd_set",
                  "cmd_touch", "touch_hits", "touch_misses", "delete_hits",
                  "delete_misses", "incr_hits", "incr_misses", "decr_hits",
                  "decr_misses", "cas_hits", "cas_badval", "cas_misses", "cmd_flush"):
            if sm.get(n) != sc.get(n):
                fails += 1
                print("  stat %s: memcached %s, cached %s" % (n, sm.get(n), sc.get(n)))
    finally:
        util.stop(mc)
        util.stop(cd)
    print("%d cases and the counters, %d differences" % (len(CASES) + 1, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
