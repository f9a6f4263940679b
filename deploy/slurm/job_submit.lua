--[[
Tidegate's gate in slurmctld (SLURM 22.05, JobSubmitPlugins=lua): every job that
asks for GPUs is submitted held (priority 0: squeue shows it PENDING with
reason JobHeldUser), with a comment that says why. A user who releases it
before the broker admitted it finds it held again by the agent. tidegate-agent admits the
job through the broker and releases it (`scontrol release`) once admitted.

Install: copy to the directory of slurm.conf as job_submit.lua, set
JobSubmitPlugins=lua in slurm.conf, `scontrol reconfigure`.
Jobs without GPUs are left alone. Root's and SlurmUser's jobs are held too:
the broker must see every GPU job.
]]

local function asks_for_gpus(job_desc)
  for _, field in ipairs({"tres_per_node", "tres_per_job", "tres_per_task", "tres_per_socket"}) do
    local v = job_desc[field]
    if v ~= nil and string.find(v, "gpu") then
      return true
    end
  end
  return false
end

function slurm_job_submit(job_desc, part_list, submit_uid)
  if not asks_for_gpus(job_desc) then
    return slurm.SUCCESS
  end
  job_desc.priority = 0
  job_desc.comment = "tidegate: waiting for the broker's admission; see `tidegate job slurm:<JOBID>`"
  slurm.log_info("tidegate: job from uid %u held for admission", submit_uid)
  return slurm.SUCCESS
end

function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end

slurm.log_info("tidegate: job_submit.lua loaded")
return slurm.SUCCESS
