-- Argo CD health of a precedent.dev RemediationRequest, from the operator's kstatus conditions.
--   Degraded:    Stalled (invalid spec), Denied by policy, or an approval Rejected.
--   Progressing: not yet assessed, a new generation not yet observed, Reconciling (a dependency
--                is down), or an Escalated request waiting for a human (Approved=Unknown, or
--                Approved=False with reason Expired: its approval lapsed and it waits again).
--   Healthy:     Ready, and approved or not needing approval.
local hs = {}

local function condition(kind)
  if obj.status == nil or obj.status.conditions == nil then
    return nil
  end
  for _, c in ipairs(obj.status.conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

local function said(c, default)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return default
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to assess the request"
  return hs
end

-- Reconciling first: a retry in progress says more than a generation not yet observed.
local reconciling = condition("Reconciling")
if reconciling ~= nil and reconciling.status == "True" then
  hs.status = "Progressing"
  hs.message = said(reconciling, "Reconciling")
  return hs
end

local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if generation ~= nil and (observed == nil or observed < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the operator to observe generation " .. generation
  return hs
end

local stalled = condition("Stalled")
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = said(stalled, "Stalled")
  return hs
end

local ready = condition("Ready")
if ready == nil or ready.status ~= "True" then
  hs.status = "Progressing"
  hs.message = said(ready, "Waiting for the request to be Ready")
  return hs
end

-- The Approved condition, where the operator writes it, is what an executor waits on.
local approved = condition("Approved")
if approved ~= nil then
  if approved.status == "True" then
    hs.status = "Healthy"
    hs.message = said(ready, "Assessed")
  elseif approved.status == "False" and approved.reason ~= "Expired" then
    hs.status = "Degraded"
    hs.message = said(approved, "Not approved")
  else
    hs.status = "Progressing"
    hs.message = said(approved, "Waiting for approval")
  end
  return hs
end

-- Without it: the decision, and whether the policy asks for a human.
local decision = nil
if obj.status.risk ~= nil then
  decision = obj.status.risk.decision
end
if decision == "Denied" then
  hs.status = "Degraded"
  hs.message = said(ready, "Denied")
  return hs
end
local policy = obj.status.policy
if decision == "Escalated" or (policy ~= nil and policy.approvalRequired == true) then
  local state = nil
  if policy ~= nil and type(policy.approval) == "table" then
    state = policy.approval.state
  elseif policy ~= nil then
    state = policy.approval
  end
  if state ~= "Approved" then
    hs.status = "Progressing"
    hs.message = "Waiting for approval: " .. said(ready, "Escalated")
    return hs
  end
end
hs.status = "Healthy"
hs.message = said(ready, "Assessed")
return hs
