#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Builds the Redis Functions library of lua/ and embeds it:
#   scripts/luagen.sh OUTDIR lua/NAME.lua...
#
# Each lua/NAME.lua is one function of the library `warrantd` (warrantd(7)
# §2.1), registered as warrantd_NAME (and warrantd_NAME_batch for its batch
# form, below); the library also gets warrantd_version, which returns the
# library's version: the first 16 hex digits of the SHA-1 of the rest of
# the library's text, so that any change of lua/ is a new version (the
# worker refuses to start against another one). A file whose first line is
#   -- SHARED: name name ...
# is no function: its code (local functions named on that line) goes at
# the top of the library, before every function, which may call it.
# Writes OUTDIR/warrantd.lua (the library, as `FUNCTION LOAD` takes it:
# `redis-cli -x FUNCTION LOAD REPLACE < OUTDIR/warrantd.lua` loads it) and
# embeds it in store_scripts.c as store_library[].
# An optional line after the header (and after BATCH)
#   -- FLAGS: no-writes
# registers the function (and its batch form) with that flag: it is called
# with FCALL_RO, and Redis refuses any write in it.
#
# Each file starts with two header lines, read here:
#   -- KEYS: name name ...
#   -- ARGV: name name ... [rest...]
# (names are Lua identifiers; a last ARGV name ending in "..." takes every
# remaining argument as a list). Writes OUTDIR/store_scripts.h (an enum of
# scripts and of their argument slots) and OUTDIR/store_scripts.c (the table
# of struct store_script, see include/core/store.h). Scripts read K.hash and
# A.fence; in each body the two header lines are replaced by locals
#   local K_name, ... = KEYS[1], ...
#   local A_name, ... = ARGV[1], ...
# and every K.name and A.name in the code (not in comments) is written
# K_name and A_name, so Lua's line numbers in an error are the file's.
# Locals, not tables: Redis 7.0 ran a table prologue of the transition's 37
# names in 21,000 instructions per call, the locals in 8,000. A name the
# header does not have is an error here (a table read it as nil). Fails (and
# writes nothing) on a malformed header or an unknown name. Inside the
# library a body is the callback of its function (function(KEYS, ARGV)),
# so an error names the library's line (OUTDIR/warrantd.lua), not the file's.
#
# An optional third line
#   -- BATCH: name name ...
# names the keys and arguments that are the same for every call (key names,
# group, consumer, limits) and asks for a batch form of the script too: one
# call runs it for several items, the shared names passed once, then each
# item's own keys and arguments in header order (KEYS: shared, item 1's,
# item 2's...; ARGV the same). The body becomes a function run per item
# under pcall, so an item's error is that item's error reply in the returned
# array ({err = ...}), not its neighbours'; lines keep the file's numbers.
# (Redis 7.0 hands pcall a redis.call error as its text, "ERR ..."; a Lua
# error is "user_script:N: ..." and gets the code ERR.) The arguments of
# each item must come after the shared ones: an item may leave out its
# trailing empty arguments (store.c), so in the batch form each item's
# arguments follow their number (the loop hands them over with unpack), the
# plain form just has fewer, and line 3 (the BATCH comment) starts, in both
# forms, with "A_x = A_x or ''" for each of them.
# Redis 7.0 spends about 25,000 instructions per script call on the call
# itself and 800 per argument (bench/README.md): a batch shares both.
set -eu
[ $# -ge 2 ] || { echo "usage: $0 OUTDIR FILE.lua..." >&2; exit 64; }
out=$1; shift
mkdir -p "$out"
trap 'rm -f "$out/store_scripts.h.tmp" "$out/store_scripts.c.tmp" "$out/warrantd.lua.tmp"' EXIT
LC_ALL=C awk -v H="$out/store_scripts.h.tmp" -v C="$out/store_scripts.c.tmp" -v L="$out/warrantd.lua.tmp" '
function die(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; failed = 1; exit 1 }
function cstr(s,   o, i, c) {
	o = ""
	for (i = 1; i <= length(s); i++) {
		c = substr(s, i, 1)
		if (c == "\\" || c == "\"") o = o "\\" c
		else if (c == "\t") o = o "\\t"
		else o = o c
	}
	return o
}
function ident(s) { return s ~ /^[a-z_][a-z0-9_]*$/ && !(s in kw) }
# The code part of a body line (before "--") with K.x and A.x as K_x, A_x.
function locals(line,   code, com, out, pre, tok, c, i) {
	i = index(line, "--")
	code = i ? substr(line, 1, i - 1) : line
	com = i ? substr(line, i) : ""
	out = ""
	while (match(code, /[AK]\.[a-z_][a-z0-9_]*/)) {
		pre = substr(code, 1, RSTART - 1)
		tok = substr(code, RSTART, RLENGTH)
		c = RSTART > 1 ? substr(code, RSTART - 1, 1) : ""
		code = substr(code, RSTART + RLENGTH)
		if (c ~ /[A-Za-z0-9_.]/) { out = out pre tok; continue }
		if (!((substr(tok, 1, 1) "." substr(tok, 3)) in known)) die("not in the header: " tok)
		out = out pre substr(tok, 1, 1) "_" substr(tok, 3)
	}
	return out code com
}
# names of one header line into arr[1..n]; returns n
function names(line, tag, arr) {
	if (substr(line, 1, length(tag)) != tag) die("expected \"" tag "\"")
	return split(substr(line, length(tag) + 1), arr, " ")
}
function begin_script(   base) {
	base = FILENAME
	sub(/.*\//, "", base)
	sub(/\.lua$/, "", base)
	if (!ident(base)) die("the file name must be a Lua identifier: " base)
	name = base; up = toupper(name); ns++; script[ns] = name
	delete used
	delete known
	delete shared
	nslot = 0; batched = 0; btext = ""; raw = ""; rawb = ""; flags[ns] = ""
}
# The body so far closed; a batched script also gets NAME_batch_body and
# NAME_shared (per slot: 1 shared by every item, 0 one of each item).
function end_script(   i, sk, sa, ik, ia, kv, av, fl, nik, nia, nsk, nsa, call) {
	print ";" > C
	lib = lib "redis.register_function{function_name = \047warrantd_" name "\047, callback = function(KEYS, ARGV)\n" raw "end" regflags() "}\n"
	if (!batched) return
	sk = ""; sa = ""; kv = ""; av = ""; ik = ""; ia = ""; fl = ""; nik = 0; nia = 0; nsk = 0; nsa = 0
	for (i = 0; i < nslot; i++) {
		fl = fl (i ? ", " : "") (slotname[i] in shared ? 1 : 0)
		if (slotname[i] in shared) {
			if (slotkey[i]) { nsk++; sk = sk (nsk > 1 ? ", " : "") "K_" slotname[i]; kv = kv (nsk > 1 ? ", " : "") "KEYS[" nsk "]" }
			else { nsa++; sa = sa (nsa > 1 ? ", " : "") "A_" slotname[i]; av = av (nsa > 1 ? ", " : "") "ARGV[" nsa "]" }
		} else if (slotkey[i]) {
			nik++; ik = ik (nik > 1 ? ", " : "") "K_" slotname[i]
			call = call ", KEYS[k + " nik "]"
		} else {
			nia++; ia = ia (nia > 1 ? ", " : "") "A_" slotname[i]
		}
	}
	if (nik + nia == 0) die("a batch needs a key or an argument that is not shared")
	printf "static const unsigned char %s_shared[] = {%s};\n", name, fl > C
	printf "static const char %s_batch_body[] =\n", name > C
	fb = ""
	both((nsk ? "local " sk " = " kv : "") (nsk && nsa ? " " : "") (nsa ? "local " sa " = " av : ""))
	both("local function one(" ik (nik && nia ? ", " : "") ia ")")
	printf "%s", btext > C
	fb = fb rawb
	both("end")
	both("local out = {}")
	both("local k, a, i, na = " nsk ", " nsa ", 0, #ARGV")
	both("while a < na do")
	both("  local n = tonumber(ARGV[a + 1])")
	both("  local ok, r = pcall(one" call ", unpack(ARGV, a + 2, a + 1 + n))")
	both("  if not ok and type(r) ~= \047table\047 then")
	both("    r = tostring(r)")
	both("    if not string.find(r, \047^%u+ \047) then r = \047ERR \047 .. r end")
	both("    r = {err = r}")
	both("  end")
	both("  i = i + 1")
	both("  out[i] = r")
	both("  k, a = k + " nik ", a + 1 + n")
	both("end")
	both("return out")
	lib = lib "redis.register_function{function_name = \047warrantd_" name "_batch\047, callback = function(KEYS, ARGV)\n" fb "end" regflags() "}\n"
	print ";" > C
	batch[ns] = 1
}
# One line of the batch form: into C (a C string) and into fb (raw Lua).
function both(line) {
	printf "\"%s\\n\"\n", cstr(line) > C
	fb = fb line "\n"
}
# The flags of the function being registered (", flags = {...}" or "").
function regflags() {
	return flags[ns] == "" ? "" : ", flags = {\047" flags[ns] "\047}"
}
function slot(nm, i) {
	if (!ident(nm)) die("not a Lua identifier: " nm)
	if (nm in used) die("named twice: " nm)
	used[nm] = 1
	slotname[i] = nm; slotkey[i] = i < nk; nslot = i + 1
	slots = slots sprintf("\tSTORE_%s_%s = STORE_SLOT(STORE_%s, %d),\n", up, toupper(nm), up, i)
}
BEGIN {
	split("and break do else elseif end false for function if in local nil not or repeat return then true until while", k, " ")
	for (i in k) kw[k[i]] = 1
	ns = 0; slots = ""; maxslots = 0
	print "/* Generated by scripts/luagen.sh from lua/NAME.lua: do not edit. */" > C
	print "#include \"core/store.h\"" > C
}
FNR == 1 {
	if (open && !(ns in nargs)) die("the file before this one has no \"-- ARGV:\" line")
	if (open) end_script()
	open = 0
	inshared = $0 ~ /^-- SHARED:/
	if (inshared) { prelude = prelude $0 "\n"; next }
	open = 1
	begin_script()
	nk = names($0, "-- KEYS:", keys)
	pro = ""; vals = ""; list = ""
	for (i = 1; i <= nk; i++) {
		slot(keys[i], i - 1)
		known["K." keys[i]] = 1
		pro = pro (i > 1 ? ", " : "") "K_" keys[i]
		vals = vals (i > 1 ? ", " : "") "KEYS[" i "]"
		list = list "\"" keys[i] "\", "
	}
	print "" > C
	printf "static const char *const %s_keys[] = {%sNULL};\n", name, list > C
	nkeys[ns] = nk
	kline = nk ? "local " pro " = " vals : "-- no keys"
	next
}
inshared {
	if ($0 ~ /[^A-Za-z0-9_][AK]\.[a-z_]/) die("shared code has no K.name or A.name")
	prelude = prelude $0 "\n"
	next
}
FNR == 2 {
	na = names($0, "-- ARGV:", args)
	rest[ns] = "NULL"; pro = ""; vals = ""; list = ""; loop = ""
	for (i = 1; i <= na; i++) {
		a = args[i]
		if (a ~ /\.\.\.$/) {
			if (i != na) die("only the last argument may end in ...")
			a = substr(a, 1, length(a) - 3)
			if (!ident(a) || (a in used)) die("bad list name: " a)
			rest[ns] = "\"" a "\""
			known["A." a] = 1
			loop = "local A_" a " = {} for i = " i ", #ARGV do A_" a "[i - " i - 1 "] = ARGV[i] end"
			na--
			break
		}
		slot(a, nk + i - 1)
		known["A." a] = 1
		pro = pro (i > 1 ? ", " : "") "A_" a
		vals = vals (i > 1 ? ", " : "") "ARGV[" i "]"
		list = list "\"" a "\", "
	}
	printf "static const char *const %s_args[] = {%sNULL};\n", name, list > C
	nargs[ns] = na
	if (nk + na > maxslots) maxslots = nk + na
	aline = (pro != "" ? "local " pro " = " vals : "") (pro != "" && loop != "" ? " " : "") loop
	if (aline == "") aline = "-- no arguments"
	printf "static const char %s_body[] =\n\"%s\\n\"\n\"%s\\n\"\n", name, cstr(kline), cstr(aline) > C
	raw = kline "\n" aline "\n"
	next
}
FNR == 3 && /^-- BATCH:/ {
	nb = names($0, "-- BATCH:", bn)
	if (nb == 0) die("a BATCH line names nothing")
	if (rest[ns] != "NULL") die("a script with a list (...) has no batch form")
	for (i = 1; i <= nb; i++) {
		if (!(("K." bn[i]) in known) && !(("A." bn[i]) in known)) die("not in the header: " bn[i])
		shared[bn[i]] = 1
	}
	# The arguments of each item come after the shared ones, so that its
	# trailing empty ones can be left out in both forms; this line (the
	# BATCH comment, in both) sets what was left out to "".
	defaults = ""
	for (i = 1; i <= na; i++) {
		if (args[i] in shared) {
			if (defaults != "") die("a shared argument after one of each item: " args[i])
			continue
		}
		defaults = defaults "A_" args[i] " = A_" args[i] " or \047\047 "
	}
	batched = 1
}
FNR <= 4 && /^-- FLAGS:/ {
	if ($0 != "-- FLAGS: no-writes") die("the only flag is no-writes")
	flags[ns] = "no-writes"
}
{
	r = (FNR == 3 && batched ? defaults : "") locals($0)
	l = "\"" cstr(r) "\\n\"\n"
	printf "%s", l > C
	btext = btext l
	raw = raw r "\n"
	rawb = rawb r "\n"
}
END {
	if (failed) exit 1
	if (ns == 0) { print "no scripts" > "/dev/stderr"; exit 1 }
	if (open && !(ns in nargs)) die("no \"-- ARGV:\" line")
	if (open) end_script()
	if (failed) exit 1
	print "#!lua name=warrantd" > L
	print "-- Generated by scripts/luagen.sh from lua/NAME.lua: do not edit." > L
	print "-- SPDX-License-Identifier: BSD-2-Clause" > L
	printf "%s%s", prelude, lib > L
	print "" > C
	print "const struct store_script store_scripts[STORE_NSCRIPTS] = {" > C
	for (i = 1; i <= ns; i++)
		printf "\t[STORE_%s] = {.name = \"%s\", .function = \"warrantd_%s\", .batch_function = %s, .read_only = %d, .body = %s_body, .keys = %s_keys, .args = %s_args, .rest = %s, .nkeys = %d, .nargs = %d, .batch = %s, .shared = %s},\n", toupper(script[i]), script[i], script[i], (i in batch) ? "\"warrantd_" script[i] "_batch\"" : "NULL", flags[i] == "no-writes", script[i], script[i], script[i], rest[i], nkeys[i], nargs[i], (i in batch) ? script[i] "_batch_body" : "NULL", (i in batch) ? script[i] "_shared" : "NULL" > C
	print "};" > C
	print "/* Generated by scripts/luagen.sh from lua/NAME.lua: do not edit. */" > H
	print "#ifndef WARRANTD_STORE_SCRIPTS_H" > H
	print "#define WARRANTD_STORE_SCRIPTS_H" > H
	print "" > H
	print "/* One per lua/NAME.lua, in the order of the file names. */" > H
	print "enum store_script_id {" > H
	for (i = 1; i <= ns; i++) printf "\tSTORE_%s,\n", toupper(script[i]) > H
	print "\tSTORE_NSCRIPTS" > H
	print "};" > H
	print "" > H
	print "/* A slot: the script in the high bits, the position (keys, then ARGV) low. */" > H
	print "#define STORE_SLOT(script, i) ((int)(script) << 8 | (i))" > H
	printf "#define STORE_SLOTS_MAX %d\n\n", maxslots > H
	print "/* STORE_<SCRIPT>_<NAME>: the slot of a key or argument named in the header. */" > H
	print "enum store_slot {" > H
	printf "%s", slots > H
	print "};" > H
	print "" > H
}
' "$@"
# The version: what the library holds before its version function.
version=$(sha1sum < "$out/warrantd.lua.tmp" | cut -c1-16)
printf "redis.register_function{function_name = 'warrantd_version', callback = function() return '%s' end, flags = {'no-writes'}}\n" \
    "$version" >> "$out/warrantd.lua.tmp"
{
	echo '/* The library (warrantd(7) §2.1): its version, and its name in FUNCTION LIST. */'
	echo "#define STORE_LIBRARY_VERSION \"$version\""
	echo '#define STORE_LIBRARY_NAME "warrantd"'
	echo ''
	echo '#endif'
} >> "$out/store_scripts.h.tmp"
{
	echo ''
	echo '/* OUTDIR/warrantd.lua, for FUNCTION LOAD. */'
	echo 'const char store_library[] ='
	LC_ALL=C sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' -e 's/^/"/' -e 's/$/\\n"/' "$out/warrantd.lua.tmp"
	echo ';'
} >> "$out/store_scripts.c.tmp"
mv "$out/warrantd.lua.tmp" "$out/warrantd.lua"
mv "$out/store_scripts.h.tmp" "$out/store_scripts.h"
mv "$out/store_scripts.c.tmp" "$out/store_scripts.c"
