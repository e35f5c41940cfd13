-- wrk script of bench_mail_serve.py: POST /checkv2 with the messages listed in the file given
-- after "--", in turn, 20 users; a second argument pauses each connection that many ms between
-- an answer and its next message (a paced client, as an MTA's SMTP sessions are)
local bodies = {}
local i = 0
local pause = 0
function init(args)
  for path in io.lines(args[1]) do
    local f = io.open(path, "rb")
    bodies[#bodies + 1] = f:read("*a")
    f:close()
  end
  pause = tonumber(args[2] or "0")
  i = math.random(#bodies)
end
function request()
  i = i % #bodies + 1
  return wrk.format("POST", "/checkv2", {["User"] = "u" .. (i % 20)}, bodies[i])
end
function delay()
  return pause
end
