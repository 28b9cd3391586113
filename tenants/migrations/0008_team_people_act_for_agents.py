from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("tenants", "0007_room_project"),
    ]

    operations = [
        migrations.AddField(
            model_name="team",
            name="people_act_for_agents",
            field=models.BooleanField(
                default=False,
                help_text=(
                    "People may accept a handoff or resolve a review on an agent's behalf from "
                    "the room page (each such action names the person in the log)."
                ),
            ),
        ),
    ]
