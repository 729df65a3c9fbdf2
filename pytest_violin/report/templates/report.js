(function(){
var fo=document.getElementById('f-fail'),ft=document.getElementById('f-task'),fq=document.getElementById('f-text'),
fx=document.getElementById('f-outcome'),cnt=document.getElementById('f-count'),rows=document.querySelectorAll('tr.s'),
fk=document.getElementById('f-kind');
function apply(){var onlyFail=fo.checked,task=ft.value,oc=fx.value,q=fq.value.toLowerCase(),kind=fk?fk.value:'',shown=0;
for(var i=0;i<rows.length;i++){var r=rows[i],ok=true;
if(onlyFail&&r.getAttribute('data-outcome')==='passed')ok=false;
if(ok&&oc&&r.getAttribute('data-outcome')!==oc)ok=false;
if(ok&&task&&r.getAttribute('data-task')!==task)ok=false;
if(ok&&kind&&(' '+(r.getAttribute('data-kinds')||'')+' ').indexOf(' '+kind+' ')<0)ok=false;
if(ok&&q&&r.textContent.toLowerCase().indexOf(q)<0)ok=false;
r.style.display=ok?'':'none';if(ok)shown++;}
cnt.textContent=shown+' of '+rows.length+' samples shown';}
fo.addEventListener('change',apply);ft.addEventListener('change',apply);if(fk)fk.addEventListener('change',apply);fx.addEventListener('change',apply);fq.addEventListener('input',apply);apply();
})();
