-- Argo CD health of a precedent.dev Playbook: Healthy once the operator has counted its
-- executions for the current generation (status.observedGeneration), Degraded when a Ready
-- condition says it was refused, Progressing until then.
local hs = {}
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "False" then
      hs.status = "Degraded"
      hs.message = c.message or c.reason
      return hs
    end
  end
end
local generation = obj.metadata.generation or 1
if obj.status == nil or obj.status.observedGeneration == nil or obj.status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to count the playbook's executions"
  return hs
end
hs.status = "Healthy"
local executions = obj.status.executions or 0
local rate = obj.status.successRate
if rate ~= nil then
  hs.message = string.format("%d executions, smoothed success rate %.2f", executions, rate)
else
  hs.message = string.format("%d executions", executions)
end
return hs
