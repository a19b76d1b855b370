--[[
Jobsight's advice at submit time (docs/advise.md), for Slurm's cli_filter/lua
plugin, which runs this file inside sbatch, salloc and srun on the login node
before a job is submitted.

For a job about to be submitted it runs `jobsight advise` with the job's
request and prints its answer (what the caller's own comparable finished jobs
used, and the request that would have served them, as #SBATCH lines) to the
user's terminal. It never changes the request and never fails or holds up a
submission: the command runs under a hard time limit, and any failure, a slow
store or a missing command means silence.

Install: with CliFilterPlugins=cli_filter/lua in slurm.conf, Slurm reads
cli_filter.lua from slurm.conf's directory. A site without a cli_filter.lua of
its own links this file there:
    ln -s /usr/share/jobsight/slurm/cli_filter.lua /etc/slurm/cli_filter.lua
A site with its own calls jobsight_advise(options, offset) from its
slurm_cli_pre_submit, after dofile("/usr/share/jobsight/slurm/cli_filter.lua")
(this file defines the three hooks only where the site's file has not).

Turning it off: for the whole site, create /etc/jobsight/advise.off (or set
advise.enabled: false in /etc/jobsight/site.yaml); for one user, set
JOBSIGHT_NO_ADVICE=1 in the environment or create ~/.jobsight-no-advice.
--]]

-- The settings. A site changes them by defining jobsight_advice_settings
-- with the keys it wants different before this file runs (its own
-- cli_filter.lua, then dofile of this one), or by editing them here.
local jobsight_defaults = {
	-- The site command (installed setgid to read the store with the
	-- login node's read-only credential: docs/site-config.md).
	command = "/usr/bin/jobsight",
	-- Seconds the command may take in all (with the opt-out file's
	-- check), then it is killed and the submission goes on in silence.
	timeout = 1,
	-- The commands that show advice: sbatch only by default (add salloc
	-- or srun to taste).
	types = { sbatch = true },
	-- Only when the user's terminal is there to read it (stderr is a
	-- terminal): workflow tools submitting in batch get nothing, unless
	-- the site sets this to false.
	interactive_only = true,
	-- The site's switch: advice is off while this file exists.
	site_off_file = "/etc/jobsight/advise.off",
	-- The user's switches.
	user_off_env = "JOBSIGHT_NO_ADVICE",
	user_off_file = ".jobsight-no-advice",
}
jobsight_advice_settings = jobsight_advice_settings or {}
for k, v in pairs(jobsight_defaults) do
	if jobsight_advice_settings[k] == nil then
		jobsight_advice_settings[k] = v
	end
end

-- The options passed on to `jobsight advise`, by Slurm's option names.
local jobsight_passed = { "cpus-per-task", "ntasks", "nodes", "mem", "mem-per-cpu", "gpus", "gres", "time",
	"partition", "account", "job-name" }

local function jobsight_exists(path)
	if path == nil or path == "" then
		return false
	end
	local f = io.open(path, "r")
	if f then
		f:close()
		return true
	end
	return false
end

-- Single-quoted for /bin/sh: nothing a user typed (a job name, a path) is
-- ever read by the shell as anything but one word.
local function jobsight_quote(s)
	return "'" .. (string.gsub(tostring(s), "'", "'\\''")) .. "'"
end

-- The switches read here are an environment variable and a file on the
-- login node's own disk; the user's file in their home (NFS, perhaps) is
-- looked for by the shell under the time limit.
local function jobsight_off()
	local s = jobsight_advice_settings
	local v = os.getenv(s.user_off_env)
	if v ~= nil and v ~= "" and v ~= "0" then
		return true
	end
	return jobsight_exists(s.site_off_file)
end

local function jobsight_run(options, offset)
	local s = jobsight_advice_settings
	if offset ~= nil and offset ~= 0 then
		return -- a heterogeneous job: advice for its first component only
	end
	if not s.types[options["type"]] or jobsight_off() then
		return
	end
	local args = {}
	for _, name in ipairs(jobsight_passed) do
		local v = options[name]
		if v ~= nil and v ~= "" then
			args[#args + 1] = "--" .. name .. "=" .. jobsight_quote(v)
		end
	end
	if options["job-name"] == nil and options["wrap"] ~= nil then
		args[#args + 1] = "--job-name=wrap"
	end
	local argv = options.argv
	if argv ~= nil and argv[1] ~= nil and options["wrap"] == nil then
		args[#args + 1] = "--script=" .. jobsight_quote(argv[1])
	end
	-- sh -c gets the user's opt-out file as $1, the command as $2 and
	-- its arguments after: nothing is quoted twice.
	local script = 'test -e "$HOME/$1" && exit 0; shift; exec "$@"'
	local cmd = "exec timeout -k 0.1 " .. tostring(tonumber(s.timeout) or 1) .. " sh -c " .. jobsight_quote(script)
		.. " jobsight " .. jobsight_quote(s.user_off_file) .. " " .. jobsight_quote(s.command) .. " advise "
		.. table.concat(args, " ") .. " </dev/null 2>/dev/null"
	if s.interactive_only then
		cmd = "test -t 2 || exit 0; " .. cmd
	end
	local p = io.popen(cmd, "r")
	if p == nil then
		return
	end
	local out = p:read("*a")
	local ok, how, code = p:close()
	-- Lua 5.1's close returns only true; later ones the exit status.
	if out ~= nil and out ~= "" and (ok or how == nil) then
		io.stderr:write(out)
	end
end

-- jobsight_advise prints the advice for the job options describes;
-- whatever happens, it returns nothing and raises nothing.
function jobsight_advise(options, offset)
	pcall(jobsight_run, options, offset)
end

if slurm_cli_setup_defaults == nil then
	function slurm_cli_setup_defaults(options, early_pass)
		return slurm.SUCCESS
	end
end

if slurm_cli_pre_submit == nil then
	function slurm_cli_pre_submit(options, offset)
		jobsight_advise(options, offset)
		return slurm.SUCCESS
	end
end

if slurm_cli_post_submit == nil then
	function slurm_cli_post_submit(offset, jobid, stepid)
		return slurm.SUCCESS
	end
end
