const {measure,jsonBody}=require('./lib/load');const s=require('/tmp/stack.json');
const which=process.argv[2];const dur=Number(process.argv[3]||5);
(async()=>{const t=which==='gw'?{url:s.gateway+'/v1/bench/echo',headers:{authorization:'Bearer '+s.key},pids:{server:s.gwpid}}:{url:s.bare+'/echo',headers:{},pids:{server:s.barepid}};
const r=await measure({...t,body:jsonBody(200),connections:50,duration:dur,clkTck:100});console.log(which,r.req_per_s,r.p50_ms,r.p99_ms,r.cpu_us_per_req,r.non2xx);})();
